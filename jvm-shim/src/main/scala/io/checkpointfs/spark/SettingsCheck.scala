package io.checkpointfs.spark

import java.util.Locale

import org.apache.hadoop.conf.Configuration

/**
 * One shim setting, as protocol.json's `settings` table lists it ([[Protocol.Settings]]): the kind of value it takes
 * (`choice`, `int`, `bool`, `size`, `schemes`), the choices of a choice, the minimum of an int or size, its default
 * as text (None: derived elsewhere), and whether an empty value or `inherit` keeps the file system's own S3A setting.
 */
private[spark] final case class Setting(key: String, kind: String, choices: Seq[String], minimum: Long,
    default: Option[String], inherit: Boolean) {

  /** What the key accepts, in words (the end of every message about its value). */
  def accepts: String = {
    val text = kind match {
      case "choice" => "one of " + choices.mkString(", ")
      case "int" => s"an integer of at least $minimum"
      case "bool" => "true or false"
      case "size" => s"a size in bytes of at least $minimum, with an optional K, M, G or T suffix"
      case _ => "comma-separated URI schemes"
    }
    text + (if (inherit) s", or ${Protocol.InheritValue} (or empty) to keep the file system's own" else "")
  }
}

/**
 * The check of the shim's settings when a manager is made, the JVM twin of Python's
 * `checkpointfs.protocol.settings` (tests/protocol/golden_settings.json holds the messages both must give): a
 * `checkpointfs.*` key (or `spark.hadoop.checkpointfs.*`, as a session's SQL conf passes it on) that the table does
 * not list is a typo, named with the closest listed key; a value its kind does not accept names the key and what
 * it accepts. Any problem fails the manager's construction, so the query fails at start.
 */
private[spark] object SettingsCheck {
  val SparkPrefix = "spark.hadoop."

  private val byKey: Map[String, Setting] = Protocol.Settings.map(s => s.key -> s).toMap
  private val SizePattern = "(\\d+)([kKmMgGtT]?)".r
  private val IntPattern = "[+-]?\\d+".r
  private val SchemePattern = "[A-Za-z][A-Za-z0-9+.-]*".r

  /** The setting called `key`; IllegalArgumentException when the table has none (a key the shim's code names). */
  def setting(key: String): Setting =
    byKey.getOrElse(key, throw new IllegalArgumentException(s"protocol.json lists no setting '$key'"))

  /** Levenshtein distance: the fewest single-character inserts, deletes and substitutions from `a` to `b`. */
  def editDistance(a: String, b: String): Int = {
    var previous = Array.tabulate(b.length + 1)(identity)
    for (i <- 1 to a.length) {
      val current = new Array[Int](b.length + 1)
      current(0) = i
      for (j <- 1 to b.length) {
        val substitution = previous(j - 1) + (if (a.charAt(i - 1) == b.charAt(j - 1)) 0 else 1)
        current(j) = math.min(math.min(previous(j) + 1, current(j - 1) + 1), substitution)
      }
      previous = current
    }
    previous(b.length)
  }

  private def withoutSparkPrefix(key: String): String = if (key.startsWith(SparkPrefix)) key.substring(SparkPrefix.length) else key

  /**
   * The listed key nearest `key` by edit distance (the first on a tie), written as `key` is (with its
   * `spark.hadoop.` prefix when it has one); None when further than a third of its length.
   */
  def closest(key: String): Option[String] = {
    val name = withoutSparkPrefix(key)
    var best: Option[(String, Int)] = None
    for (s <- Protocol.Settings) {
      val d = editDistance(name, s.key)
      if (best.forall(d < _._2)) best = Some((s.key, d))
    }
    val prefix = if (key.startsWith(SparkPrefix)) SparkPrefix else ""
    best.collect { case (k, d) if d <= k.length / 3 => prefix + k }
  }

  private def valueOk(setting: Setting, value: String): Boolean = {
    val text = value.trim
    if (setting.inherit && (text.isEmpty || text.toLowerCase(Locale.ROOT) == Protocol.InheritValue)) return true
    setting.kind match {
      case "choice" => setting.choices.contains(text.toLowerCase(Locale.ROOT))
      case "bool" => text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")
      case "int" =>
        IntPattern.pattern.matcher(text).matches && {
          val n = BigInt(text.stripPrefix("+"))
          n >= setting.minimum && n <= Int.MaxValue
        }
      case "size" => text match {
        case SizePattern(digits, suffix) =>
          val factor = suffix.toLowerCase(Locale.ROOT) match {
            case "" => 1L
            case "k" => 1L << 10
            case "m" => 1L << 20
            case "g" => 1L << 30
            case _ => 1L << 40
          }
          BigInt(digits) * factor >= setting.minimum
        case _ => false
      }
      case _ => text.split(",").map(_.trim).filter(_.nonEmpty).forall(s => SchemePattern.pattern.matcher(s).matches)
    }
  }

  /** What is wrong with `key` = `value` in the words Python's `settings.problem` uses; None when nothing is, or when
   * `key` is not a shim setting's. */
  def problem(key: String, value: String): Option[String] = {
    val name = withoutSparkPrefix(key)
    if (!name.startsWith(Protocol.SettingsPrefix)) None
    else byKey.get(name) match {
      case None =>
        val hint = closest(key).map(k => s"did you mean '$k'?")
          .getOrElse("known keys: " + Protocol.Settings.map(_.key).mkString(", "))
        Some(s"unknown setting '$key': $hint")
      case Some(setting) =>
        if (valueOk(setting, value)) None else Some(s"$key='$value': expected ${setting.accepts}")
    }
  }

  /**
   * Every problem of the shim settings in `conf` (`checkpointfs.*` and `spark.hadoop.checkpointfs.*` keys); a key
   * that is also there with `spark.hadoop.` and the same value (Spark copies `spark.hadoop.X` to `X` in the Hadoop
   * configuration) is reported once, as the user wrote it (Python's `settings.problems` does the same).
   */
  def problems(conf: Configuration): Seq[String] = {
    val found = Seq.newBuilder[String]
    val written = conf.getPropsWithPrefix(SparkPrefix + Protocol.SettingsPrefix)
    for (prefix <- Seq(Protocol.SettingsPrefix, SparkPrefix + Protocol.SettingsPrefix)) {
      val props = conf.getPropsWithPrefix(prefix)
      val keys = new java.util.TreeSet[String](props.keySet())
      keys.forEach { rest =>
        val copied = prefix == Protocol.SettingsPrefix && written.get(rest) == props.get(rest)
        if (!copied) problem(prefix + rest, props.get(rest)).foreach(found += _)
      }
    }
    found.result()
  }

  /** Fail with a [[CheckpointStoreConfigException]] naming every problem of the shim settings in `conf`. */
  def require(conf: Configuration, where: String): Unit = {
    val found = problems(conf)
    if (found.nonEmpty) {
      throw new CheckpointStoreConfigException(s"$where: invalid checkpointfs settings: ${found.mkString("; ")}")
    }
  }
}
