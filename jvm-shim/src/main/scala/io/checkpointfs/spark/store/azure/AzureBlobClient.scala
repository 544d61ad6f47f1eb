package io.checkpointfs.spark
package store
package azure

import java.io.{ByteArrayOutputStream, FileNotFoundException, IOException, InputStream}
import java.net.{HttpURLConnection, URI, URLDecoder, URLEncoder}
import java.nio.charset.StandardCharsets
import java.time.{ZonedDateTime, ZoneOffset}
import java.time.format.DateTimeFormatter
import java.util.{Base64, Locale}
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/**
 * A failed Azure Blob Storage request: the HTTP `status` and the service's `x-ms-error-code` (""
 * when the answer had none, as a HEAD's never has a body). [[Failures.answerOf]] reads both through `statusCode()`
 * and `errorCode()`, so the protocol's answer table sorts it like the Python store's answers.
 */
class AzureBlobException(val status: Int, val code: String, message: String)
  extends IOException(message) {
  def statusCode(): Int = status
  def errorCode(): String = code
}

/**
 * Azure's Shared Key authorization (the "Authorize with Shared Key" page of the Storage REST reference, versions
 * 2009-09-19 and later), by hand: no Azure library. The string to sign is the verb, eleven standard headers (an
 * empty Content-Length for 0), the `x-ms-` headers lower-cased and sorted, and the canonicalized resource:
 * `/<account><URL path>`, then each query parameter, its name lower-cased, sorted, `\nname:value`. The signature is
 * the base64 HMAC-SHA256 of it under the base64-decoded account key.
 */
private[spark] object AzureSharedKey {
  private val StandardHeaders = Seq("content-encoding", "content-language", "content-length", "content-md5",
    "content-type", "date", "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range")

  /** The string to sign for a request of `method` to `url` with `headers` (names in any case). */
  def stringToSign(method: String, url: String, headers: Map[String, String], account: String): String = {
    val lower = headers.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val standard = StandardHeaders.map { name =>
      val value = lower.getOrElse(name, "")
      if (name == "content-length" && value == "0") "" else value
    }
    val msHeaders = lower.toSeq.filter(_._1.startsWith("x-ms-")).sortBy(_._1)
      .map { case (k, v) => s"$k:${v.trim}\n" }.mkString
    (method.toUpperCase(Locale.ROOT) +: standard).mkString("", "\n", "\n") + msHeaders +
      canonicalizedResource(url, account)
  }

  /** `/<account><path>` and the sorted query parameters (names lower-cased, values decoded). */
  def canonicalizedResource(url: String, account: String): String = {
    val uri = new URI(url)
    val path = Option(uri.getRawPath).filter(_.nonEmpty).getOrElse("/")
    val params = Option(uri.getRawQuery).filter(_.nonEmpty).toSeq.flatMap(_.split('&')).map { pair =>
      val (k, v) = pair.indexOf('=') match {
        case -1 => (pair, "")
        case i => (pair.substring(0, i), pair.substring(i + 1))
      }
      decode(k).toLowerCase(Locale.ROOT) -> decode(v)
    }.groupBy(_._1).toSeq.sortBy(_._1)
      .map { case (k, vs) => s"\n$k:${vs.map(_._2).sorted.mkString(",")}" }
    s"/$account$path" + params.mkString
  }

  /** The base64 HMAC-SHA256 of `text` under `key` (the account key, decoded). */
  def sign(text: String, key: Array[Byte]): String = {
    val mac = Mac.getInstance("HmacSHA256")
    mac.init(new SecretKeySpec(key, "HmacSHA256"))
    Base64.getEncoder.encodeToString(mac.doFinal(text.getBytes(StandardCharsets.UTF_8)))
  }

  /** The `Authorization` header's value. */
  def authorization(method: String, url: String, headers: Map[String, String], account: String,
      key: Array[Byte]): String =
    s"SharedKey $account:${sign(stringToSign(method, url, headers, account), key)}"

  private def decode(s: String): String = URLDecoder.decode(s, StandardCharsets.UTF_8)

  /** RFC 1123 dates as Azure writes them (two-digit day). */
  val DateFormat: DateTimeFormatter = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)

  def now(): String = DateFormat.format(ZonedDateTime.now(ZoneOffset.UTC))
}

/**
 * The Blob service requests the shim sends itself on an Azure container (`containerUrl`:
 * `https://<account>.blob.core.windows.net/<container>`, or an emulator's `http://host:port/<account>/<container>`),
 * signed with the account's Shared Key. One method, one request, no retry (the caller's loop retries by the
 * protocol's answer table); a failed answer is an [[AzureBlobException]], a transport failure the JDK's exception
 * (`ConnectException`, `SocketTimeoutException`, `SocketException`, ...).
 */
private[spark] final class AzureBlobClient(val containerUrl: String, val account: String, key: Array[Byte],
    connectTimeoutMs: Int = 30000, readTimeoutMs: Int = 60000) {
  import AzureBlobClient._

  /** Put Blob (a block blob) of `data[0, len)`, `If-None-Match: *` when `ifNoneMatch`, the write id in metadata. */
  def putBlob(blob: String, data: Array[Byte], len: Int, ifNoneMatch: Boolean, writeId: String): Response =
    send("PUT", blob, "", conditional(ifNoneMatch) ++ metadata(writeId) ++
      Map("x-ms-blob-type" -> "BlockBlob", "Content-Type" -> OctetStream), Some((data, len)))

  /** Put Block: stage `data[0, len)` as the block `blockId` (already base64) of `blob`: invisible until committed. */
  def putBlock(blob: String, blockId: String, data: Array[Byte], len: Int): Response =
    send("PUT", blob, s"comp=block&blockid=${encode(blockId)}", Map("Content-Type" -> OctetStream),
      Some((data, len)))

  /** Put Block List: commit `blockIds` (base64, in order), `If-None-Match: *` when `ifNoneMatch`, with the write id. */
  def putBlockList(blob: String, blockIds: Seq[String], ifNoneMatch: Boolean, writeId: String): Response = {
    val body = blockIds.map(id => s"<Latest>$id</Latest>").mkString(
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>", "", "</BlockList>").getBytes(StandardCharsets.UTF_8)
    send("PUT", blob, "comp=blocklist", conditional(ifNoneMatch) ++ metadata(writeId) ++
      Map("Content-Type" -> "application/xml"), Some((body, body.length)))
  }

  /** Get Blob Properties: the blob's headers (names lower-cased), None when there is no (committed) blob. */
  def properties(blob: String): Option[Map[String, String]] =
    try Some(send("HEAD", blob, "", Map.empty, None).headers)
    catch { case e: AzureBlobException if e.status == 404 => None }

  /**
   * Delete Blob; FileNotFoundException when absent. `onlyUncommitted`: conditional on `If-Unmodified-Since` 1970,
   * which no committed blob meets (412), so only a name holding nothing but uncommitted blocks goes (where the
   * service keeps one, as Azurite does).
   */
  def deleteBlob(blob: String, onlyUncommitted: Boolean = false): Response =
    try send("DELETE", blob, "", if (onlyUncommitted) Map("If-Unmodified-Since" -> LongAgo) else Map.empty, None)
    catch {
      case e: AzureBlobException if e.status == 404 =>
        throw new FileNotFoundException(s"${url(blob, "")}: ${e.getMessage}").initCause(e)
    }

  /** List Blobs of at most one name starting with `prefix`: whether there is one. */
  def anyBelow(prefix: String): Boolean = {
    val query = s"restype=container&comp=list&prefix=${encode(prefix)}&maxresults=1"
    send("GET", "", query, Map.empty, None).body.contains("<Blob>")
  }

  /** The URL of `blob` (its path segments percent-encoded) with the raw query `query`. */
  def url(blob: String, query: String): String =
    containerUrl.stripSuffix("/") + (if (blob.isEmpty) "" else "/" + blob.split("/", -1).map(encode).mkString("/")) +
      (if (query.isEmpty) "" else "?" + query)

  private def send(method: String, blob: String, query: String, extra: Map[String, String],
      body: Option[(Array[Byte], Int)]): Response = {
    val target = url(blob, query)
    val headers = extra ++ Map("x-ms-date" -> AzureSharedKey.now(), "x-ms-version" -> ApiVersion) ++
      body.map(b => "Content-Length" -> b._2.toString)
    val conn = new java.net.URL(target).openConnection().asInstanceOf[HttpURLConnection]
    var answered = false
    try {
      conn.setRequestMethod(method)
      conn.setConnectTimeout(connectTimeoutMs)
      conn.setReadTimeout(readTimeoutMs)
      conn.setUseCaches(false)
      conn.setInstanceFollowRedirects(false)
      headers.foreach { case (k, v) => if (k != "Content-Length") conn.setRequestProperty(k, v) }
      conn.setRequestProperty("Authorization", AzureSharedKey.authorization(method, target, headers, account, key))
      body.foreach { case (data, len) =>
        conn.setDoOutput(true)
        conn.setFixedLengthStreamingMode(len)
        val out = conn.getOutputStream
        try out.write(data, 0, len)
        finally out.close()
      }
      val status = conn.getResponseCode
      val received = headersOf(conn)
      if (status >= 200 && status < 300) {
        val text = drain(if (method == "HEAD") null else conn.getInputStream, if (method == "GET") 1 << 20 else 0)
        answered = true
        Response(status, received, text)
      } else {
        val text = try drain(conn.getErrorStream, 4096) catch { case _: IOException => "" }
        answered = true
        val code = received.getOrElse("x-ms-error-code", "")
        throw new AzureBlobException(status, code, s"$method $target: $status ${Option(conn.getResponseMessage)
          .getOrElse("")}${if (code.nonEmpty) s" ($code)" else ""}${summary(text)}")
      }
    } finally {
      // An answer read to its end leaves the connection to the JDK's keep-alive cache (no new TCP and TLS
      // handshake for the next request); anything else closes it.
      if (!answered) conn.disconnect()
    }
  }

  override def toString: String = s"AzureBlobClient($containerUrl)"
}

private[spark] object AzureBlobClient {
  /** The Blob service version the shim speaks (Put Blob and Put Block List honour `If-None-Match: *`). */
  val ApiVersion = "2021-08-06"
  val OctetStream = "application/octet-stream"
  /** Before any blob's Last-Modified (the Python store's `_LONG_AGO`). */
  val LongAgo = "Fri, 02 Jan 1970 00:00:00 GMT"
  /** The metadata Hadoop's ABFS and WASB write on their 0-byte directory marker blobs (value `true`). */
  val FolderMarkerKey = "hdi_isfolder"

  final case class Response(status: Int, headers: Map[String, String], body: String = "")

  def conditional(ifNoneMatch: Boolean): Map[String, String] =
    if (ifNoneMatch) Map("If-None-Match" -> "*") else Map.empty

  def metadata(writeId: String): Map[String, String] = Map(s"x-ms-meta-${Protocol.AzureWriteIdKey}" -> writeId)

  /** Percent-encoding of one path segment or query value (RFC 3986: a space is %20, never `+`). */
  def encode(s: String): String =
    URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20").replace("%7E", "~").replace("*", "%2A")

  /** The block id of part `number` of the write `writeId`, base64 (the Python store's `block_id`, then base64). */
  def blockId(writeId: String, number: Int): String =
    Base64.getEncoder.encodeToString(f"$writeId-$number%06d".getBytes(StandardCharsets.UTF_8))

  private def headersOf(conn: HttpURLConnection): Map[String, String] = {
    val out = Map.newBuilder[String, String]
    conn.getHeaderFields.forEach { (k, v) =>
      if (k != null && v != null && !v.isEmpty) out += k.toLowerCase(Locale.ROOT) -> v.get(0)
    }
    out.result()
  }

  /** Read `in` to its end (so the connection can be reused), keeping its first `keep` bytes as text. */
  private def drain(in: InputStream, keep: Int): String = {
    if (in == null) return ""
    val bytes = new ByteArrayOutputStream()
    try {
      val buffer = new Array[Byte](8192)
      var n = in.read(buffer)
      while (n >= 0) {
        if (bytes.size < keep) bytes.write(buffer, 0, math.min(n, keep - bytes.size))
        n = in.read(buffer)
      }
    } finally in.close()
    bytes.toString(StandardCharsets.UTF_8)
  }

  private def summary(text: String): String = {
    val message = "<Message>(.*?)</Message>".r.findFirstMatchIn(text.replace('\n', ' ')).map(_.group(1))
    message.map(m => s": ${m.take(300)}").getOrElse("")
  }
}
