package io.checkpointfs.spark

import java.io.ByteArrayOutputStream
import java.time.Instant

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{Abortable, FileStatus, FSDataInputStream, FileSystem, LocalFileSystem, Path,
  PathFilter}
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.compat.{CancellableFSDataOutputStream, CheckpointFileManager}
import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._

/** A local file system that says it serves `s3a://`: a scheme the shim writes directly, on a file system it does not. */
class NotS3AFileSystem extends LocalFileSystem {
  override def getUri: java.net.URI = java.net.URI.create("s3a://bucket/")
  override def getScheme: String = "s3a"
}

/** A local file system that says it serves `s3://`, as EMRFS does on EMR: not S3A. */
class NotS3AOnS3FileSystem extends LocalFileSystem {
  override def getUri: java.net.URI = java.net.URI.create("s3://bucket/")
  override def getScheme: String = "s3"
}

/**
 * [[DirectWriteCheckpointFileManager]], the router: it chooses once, for its root, between the direct manager on the
 * store [[Registry]] opens and Spark's own manager, forwards every call to the one chosen, and says so once per
 * checkpoint root (at WARN, counted, where the shim was meant to write the store directly).
 */
class RouterSuite extends AnyFunSuite {

  /** Spark's manager, standing in: records the calls it gets. */
  private final class SparkManager extends CheckpointFileManager {
    val calls = mutable.ArrayBuffer.empty[String]
    override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream = {
      calls += s"createAtomic $path"
      null
    }
    override def open(path: Path): FSDataInputStream = { calls += s"open $path"; null }
    override def list(path: Path, filter: PathFilter): Array[FileStatus] = { calls += s"list $path"; Array.empty }
    override def mkdirs(path: Path): Unit = calls += s"mkdirs $path"
    override def exists(path: Path): Boolean = { calls += s"exists $path"; true }
    override def delete(path: Path): Unit = calls += s"delete $path"
    override def isLocal: Boolean = { calls += "isLocal"; true }
    override def createCheckpointDirectory(): Path = { calls += "createCheckpointDirectory"; new Path("/spark") }
  }

  /** An object store in memory: objects with their bytes and write ids; every request it is sent, by name. */
  private final class MemoryStore extends DirectStore {
    val objects = mutable.Map.empty[String, (Array[Byte], String)]
    val sent = mutable.ArrayBuffer.empty[String]
    private def key(path: Path): String = DirectStore.keyOf(path)
    override def describe: String = "memory"
    override def identity: StoreIdentity = StoreIdentity("memory", "bucket")
    override def create(path: Path, overwrite: Boolean, writeId: String): Upload = new Upload {
      private val bytes = new ByteArrayOutputStream()
      override def write(b: Int): Unit = bytes.write(b)
      override def close(): Unit = {
        sent += s"put ${key(path)}"
        if (!overwrite && objects.contains(key(path))) throw new org.apache.hadoop.fs.FileAlreadyExistsException("412")
        objects(key(path)) = (bytes.toByteArray, writeId)
      }
      override def abort(): Abortable.AbortableResult = Upload.aborted(false)
      override def startedMultipart: Boolean = false
    }
    override def put(path: Path, file: java.io.File, writeId: String): Boolean = false
    override def uploads(path: Path): Seq[(String, Option[Instant])] = Nil
    override def abort(path: Path, uploadId: String): Unit = ()
    override def head(path: Path): Option[String] = { sent += s"head ${key(path)}"; objects.get(key(path)).map(_._2) }
    override def exists(path: Path, file: Boolean): Boolean = {
      sent += s"${if (file) "file" else "full"} ${key(path)}"
      objects.contains(key(path)) || (!file && objects.keys.exists(_.startsWith(key(path) + "/")))
    }
    override def list(dir: Path): Array[FileStatus] = {
      sent += s"list ${key(dir)}"
      objects.collect { case (k, (b, _)) if DirectStore.parentOf(k) == key(dir) =>
        new FileStatus(b.length.toLong, false, 1, 1L, 0L, new Path(dir, k.substring(k.lastIndexOf('/') + 1)))
      }.toArray
    }
    override def open(path: Path, length: Option[Long]): FSDataInputStream = {
      sent += s"get ${key(path)}"
      new FSDataInputStream(new BytesInputStream(objects(key(path))._1))
    }
    override def readListed(status: FileStatus): Option[() => Option[Array[Byte]]] = None
    override def delete(path: Path, listed: Option[FileStatus], file: Boolean): Unit = {
      sent += s"delete ${key(path)}"
      objects.remove(key(path))
    }
  }

  private def router(root: String, open: (Path, FileSystem, Options) => Either[Registry.Delegation, DirectStore],
      spark: SparkManager = new SparkManager, conf: Configuration = new Configuration(false)) =
    new DirectWriteCheckpointFileManager(new Path(root), conf, open, (_, _) => spark)

  private def tmp(name: String): String =
    new java.io.File(System.getProperty("java.io.tmpdir"), s"checkpointfs-router-$name-${java.util.UUID.randomUUID()}")
      .toURI.toString

  test("a delegated root: every call goes to Spark's manager, as it is") {
    val spark = new SparkManager
    val root = tmp("delegated")
    val m = router(root, (_, _, _) => Left(Registry.Delegation("by design", meant = false)), spark)
    assert(!m.isDirect && m.toString.contains("delegating to SparkManager"))
    val p = new Path(root, "offsets/0")
    m.createAtomic(p, overwriteIfPossible = false)
    m.open(p)
    m.list(p.getParent, (_: Path) => true)
    m.mkdirs(p.getParent)
    assert(m.exists(p))
    m.delete(p)
    assert(m.isLocal)
    assert(m.createCheckpointDirectory() == new Path("/spark"))
    assert(spark.calls == Seq(s"createAtomic $p", s"open $p", s"list ${p.getParent}", s"mkdirs ${p.getParent}",
      s"exists $p", s"delete $p", "isLocal", "createCheckpointDirectory"))
  }

  test("a direct root: every call goes to the direct manager on the store, Spark's is never made") {
    val store = new MemoryStore
    var made = 0
    val root = tmp("direct")
    val m = new DirectWriteCheckpointFileManager(new Path(root), new Configuration(false), (_, _, _) => Right(store),
      (_, _) => { made += 1; new SparkManager })
    assert(m.isDirect && m.toString.endsWith(", direct)") && made == 0)
    val p = new Path(root, "commits/0")
    val out = m.createAtomic(p, overwriteIfPossible = false)
    out.write("v1".getBytes)
    out.close()
    assert(store.sent == Seq("put " + DirectStore.keyOf(p)))
    // published with put-if-absent: known, with its bytes, so no request
    assert(m.exists(p) && m.exists(new Path(root, "commits/1")) == false)
    val in = m.open(p)
    assert(new String(in.readAllBytes()) == "v1")
    in.close()
    assert(store.sent.size == 1, store.sent)
    assert(!m.exists(new Path(root, "commits/x")))
    assert(store.sent.last == "full " + DirectStore.keyOf(new Path(root, "commits/x")))
    assert(m.list(p.getParent, (_: Path) => true).map(_.getPath.getName).toSeq == Seq("0"))
    m.delete(p)
    assert(store.objects.isEmpty && !m.isLocal && m.createCheckpointDirectory() == new Path(root))
    m.mkdirs(new Path(root, "state")) // no request
    assert(store.sent.count(_.startsWith("delete")) == 1 && !store.sent.exists(_.contains("state")))
    m.close()
  }

  test("a root the shim is meant to write directly but delegates: WARN naming the reason, counted once per root") {
    val counter = ShimMetrics.unexpectedDelegations
    val before = counter.getCount
    val root = tmp("meant")
    val meant: (Path, FileSystem, Options) => Either[Registry.Delegation, DirectStore] =
      (_, _, _) => Left(Registry.Delegation("this version of the connector lacks a call the shim needs", meant = true))
    router(root, meant)
    router(root, meant) // the same checkpoint root: said and counted once
    assert(counter.getCount == before + 1)
    router(tmp("by-design"), (_, _, _) => Left(Registry.Delegation("by design", meant = false)))
    assert(counter.getCount == before + 1, "a delegation by design is not counted")

    var said = List.empty[(Boolean, String)]
    DirectWriteCheckpointFileManager.announceDelegation(new Path("s3a://bucket/cp"), "s3a", "X", "SparkManager",
      Registry.Delegation("the reason", meant = true), (warn, line) => said ::= ((warn, line)))
    DirectWriteCheckpointFileManager.announceDelegation(new Path("file:/cp"), "file", "Y", "SparkManager",
      Registry.Delegation("by design", meant = false), (warn, line) => said ::= ((warn, line)))
    val List((info, infoLine), (warn, warnLine)) = said
    assert(warn && warnLine.startsWith("s3a://bucket/cp: scheme 's3a' (X) is not written directly by checkpointfs; " +
      "delegating to Spark's SparkManager: the reason"))
    assert(warnLine.contains(Protocol.MetricCounters.find(_ == "unexpectedDelegations").get))
    assert(!info && infoLine.endsWith("delegating to Spark's SparkManager: by design"))
    assert(counter.getCount == before + 2)
  }

  test("the registry: what is delegated by design, and what the shim was meant to write") {
    val options = Options(new Configuration(false))
    val local = FileSystem.getLocal(new Configuration(false))
    val file = Registry.open(new Path("file:/tmp/cp"), local, options)
    assert(file.swap.toOption.exists(d => !d.meant && d.reason.contains("trusted for atomic rename")), file)
    val notListed = Registry.open(new Path("file:/tmp/cp"), local, options.copy(renameSchemes = Set.empty))
    assert(notListed.swap.toOption.contains(Registry.Delegation(Registry.OtherSchemeReason, meant = false)))
    val conf = new Configuration(false)
    conf.set("fs.s3a.impl", classOf[NotS3AFileSystem].getName)
    conf.setBoolean("fs.s3a.impl.disable.cache", true)
    val notS3A = new Path("s3a://bucket/cp").getFileSystem(conf)
    val s3a = Registry.open(new Path("s3a://bucket/cp"), notS3A, options)
    assert(s3a.swap.toOption.contains(Registry.Delegation(Registry.OtherSchemeReason, meant = true)), s3a)
    val trusted = Registry.open(new Path("s3a://bucket/cp"), notS3A, options.copy(renameSchemes = Set("s3a")))
    assert(trusted.swap.toOption.exists(!_.meant), trusted)
  }

  test("s3:// on a file system other than S3A: the own S3A unless checkpointfs.s3.own.s3a=false, then delegated") {
    val conf = new Configuration(false)
    conf.set("fs.s3.impl", classOf[NotS3AOnS3FileSystem].getName)
    conf.setBoolean("fs.s3.impl.disable.cache", true)
    val emrfs = new Path("s3://bucket/cp").getFileSystem(conf)
    val on = Options(new Configuration(false))
    assert(on.ownS3A)
    assert(io.checkpointfs.spark.store.s3.OwnS3A.applies(emrfs, on))
    val off = on.copy(ownS3A = false)
    assert(!io.checkpointfs.spark.store.s3.OwnS3A.applies(emrfs, off))
    val delegated = Registry.open(new Path("s3://bucket/cp"), emrfs, off)
    assert(delegated.swap.toOption.exists(d => !d.meant && d.reason.contains("checkpointfs.s3.own.s3a=false") &&
      d.reason.contains(classOf[NotS3AOnS3FileSystem].getName)), delegated)
    val s3aUnderS3a = new Path("s3a://bucket/cp").getFileSystem({
      val c = new Configuration(false)
      c.set("fs.s3a.impl", classOf[NotS3AFileSystem].getName)
      c.setBoolean("fs.s3a.impl.disable.cache", true)
      c
    })
    assert(!io.checkpointfs.spark.store.s3.OwnS3A.applies(s3aUnderS3a, on))  // only the s3 scheme
  }
}
