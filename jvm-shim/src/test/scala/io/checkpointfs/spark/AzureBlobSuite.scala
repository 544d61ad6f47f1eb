package io.checkpointfs.spark

import java.net.InetSocketAddress
import java.nio.charset.StandardCharsets
import java.util.Base64
import java.util.concurrent.ConcurrentLinkedQueue

import com.sun.net.httpserver.{HttpExchange, HttpServer}
import org.scalatest.funsuite.AnyFunSuite

import io.checkpointfs.spark.direct._
import io.checkpointfs.spark.store._
import io.checkpointfs.spark.store.azure._
import io.checkpointfs.spark.store.gcs._
import io.checkpointfs.spark.store.s3._

// Stand-ins for hadoop-azure's classes, which the shim reaches by reflection only (public methods by name; the
// client's class by its simple name).
class AbfsBlobClient(auth: String) {
  def getAuthType(): String = auth
  private[spark] def getBaseUrl(): java.net.URL = new java.net.URL("http://127.0.0.1:10000/devstoreaccount1/ckpt")
}
class AbfsDfsClient {
  def getAuthType(): String = "SharedKey"
}
class FakeAbfsConfiguration(key: String) {
  def getAccountName(): String = "devstoreaccount1.dfs.core.windows.net"
  def getStorageAccountKey(): String = key
}
class FakeAbfsStore(client: AnyRef, key: String) {
  def getClient(): AnyRef = client
  def getAbfsConfiguration(): AnyRef = new FakeAbfsConfiguration(key)
}
class FakeAbfs(client: AnyRef, key: String = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
  extends org.apache.hadoop.fs.RawLocalFileSystem {
  setConf(new org.apache.hadoop.conf.Configuration(false))
  def getAbfsStore(): AnyRef = new FakeAbfsStore(client, key)
}

/**
 * The shim's own Azure Blob requests ([[AzureBlobClient]], [[AzureUploader]]): Shared Key signatures against
 * signatures azure-storage-blob 12.x computed for the same requests (its `SharedKeyCredentialPolicy`), how Azure's
 * answers are sorted by the protocol's table, and the requests' shapes against an in-process stand-in on loopback
 * that answers as Azure does (no Azure, no Azurite).
 */
class AzureBlobSuite extends AnyFunSuite {

  /** Azurite's published development key (not a secret). */
  private val DevKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
  private val key = Base64.getDecoder.decode(DevKey)
  private val account = "devstoreaccount1"
  private val date = "Fri, 27 Nov 2026 21:27:44 GMT"

  private def auth(method: String, url: String, headers: (String, String)*): String =
    AzureSharedKey.authorization(method, url, (headers :+ ("x-ms-date" -> date) :+ ("x-ms-version" -> "2021-08-06"))
      .toMap, account, key)

  test("Shared Key signatures match azure-storage-blob's for Put Blob, Put Block, Get Blob Properties") {
    assert(auth("PUT", "http://127.0.0.1:10000/devstoreaccount1/ckpt/a%20b/offsets/0", "x-ms-blob-type" -> "BlockBlob",
      "Content-Type" -> "application/octet-stream", "Content-Length" -> "12", "If-None-Match" -> "*",
      "x-ms-meta-checkpointfs_write_id" -> "abc123") ==
      "SharedKey devstoreaccount1:2ic8/dISheoZd0AQQFR1rGD3PkD/0zO11zXMkh0YFng=")
    assert(auth("PUT", "http://127.0.0.1:10000/devstoreaccount1/ckpt/big?comp=block&blockid=YWJjLTAwMDAwMQ%3D%3D",
      "Content-Type" -> "application/octet-stream", "Content-Length" -> "5") ==
      "SharedKey devstoreaccount1:w3py6iZ7BkNzAyCSxRQ87WUvOcdG8c6pIHAIVdJoFwk=")
    assert(auth("HEAD", "https://acct.blob.core.windows.net/ckpt/commits/0") ==
      "SharedKey devstoreaccount1:ylBphA5/5TbYPC77WWZd/xIoagkgbmj/aoGYYQbUFSE=")
  }

  test("an empty body signs an empty Content-Length, as Azure wants from version 2015-02-21") {
    assert(auth("PUT", "http://127.0.0.1:10000/devstoreaccount1/ckpt/e", "x-ms-blob-type" -> "BlockBlob",
      "Content-Type" -> "application/octet-stream", "Content-Length" -> "0") ==
      "SharedKey devstoreaccount1:wH/YcWH8ga8d+H2kHdIjZ07SiehCQs58Ok5B25r91rg=")
  }

  test("the canonicalized resource: the account, the raw path, query names lower-cased and sorted, values decoded") {
    assert(AzureSharedKey.canonicalizedResource("http://h/acct/c/k?comp=blocklist", "acct") ==
      "/acct/acct/c/k\ncomp:blocklist")
    assert(AzureSharedKey.canonicalizedResource("https://a.blob.core.windows.net/c/x%20y?restype=container&Comp=list" +
      "&prefix=a%2Fb", "a") == "/a/c/x%20y\ncomp:list\nprefix:a/b\nrestype:container")
  }

  test("blob URLs percent-encode each path segment; block ids are one length and base64") {
    val client = new AzureBlobClient("http://127.0.0.1:1/devstoreaccount1/ckpt", account, key)
    assert(client.url("a b/state/0/1.delta", "") == "http://127.0.0.1:1/devstoreaccount1/ckpt/a%20b/state/0/1.delta")
    assert(client.url("x+y~z", "comp=block") == "http://127.0.0.1:1/devstoreaccount1/ckpt/x%2By~z?comp=block")
    val ids = Seq(1, 42, 999999).map(AzureBlobClient.blockId("w1", _))
    assert(ids.map(_.length).distinct.size == 1)
    assert(new String(Base64.getDecoder.decode(ids(1)), StandardCharsets.UTF_8) == "w1-000042")
  }

  test("Azure's answers are sorted by the protocol's table (codes before statuses)") {
    def cls(status: Int, code: String): String = Failures.classify(new AzureBlobException(status, code, "x")).name
    assert(cls(409, "BlobAlreadyExists") == Protocol.Conflict)
    assert(cls(412, "ConditionNotMet") == Protocol.Conflict)
    assert(cls(503, "ServerBusy") == Protocol.Retry)
    assert(cls(500, "OperationTimedOut") == "settle")
    assert(cls(500, "InternalError") == "settle")
    assert(cls(400, "InvalidBlockList") == "upload-gone")
    assert(cls(404, "BlobNotFound") == Protocol.NotFound)
    assert(cls(404, "ContainerNotFound") == Protocol.Refuse)
    assert(cls(403, "AuthenticationFailed") == Protocol.Refuse)
    assert(cls(403, "") == Protocol.Refuse)
    // wrapped, as an IOException of a caller would carry it
    assert(Failures.classify(new java.io.IOException("close", new AzureBlobException(409, "BlobAlreadyExists", "x")))
      .name == Protocol.Conflict)
  }

  /** A stand-in Blob service: records each request, answers from `answer` (status, headers). */
  private final class FakeBlob(answer: (String, String, Map[String, String]) => (Int, Map[String, String])) {
    private val queue = new ConcurrentLinkedQueue[(String, String, Map[String, String], String)]()
    def seen: Seq[(String, String, Map[String, String], String)] = queue.toArray.toSeq
      .asInstanceOf[Seq[(String, String, Map[String, String], String)]]
    private val server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0)
    server.createContext("/", (ex: HttpExchange) => {
      val body = new String(ex.getRequestBody.readAllBytes(), StandardCharsets.UTF_8)
      var headers = Map.empty[String, String]
      ex.getRequestHeaders.forEach((k, v) => headers += k.toLowerCase -> v.get(0))
      val uri = ex.getRequestURI.getRawPath + Option(ex.getRequestURI.getRawQuery).map("?" + _).getOrElse("")
      queue.add((ex.getRequestMethod, uri, headers, body))
      val expected = AzureSharedKey.authorization(ex.getRequestMethod, s"http://127.0.0.1$uri",
        headers.filter { case (k, _) => k != "authorization" && k != "host" }, account, key)
      val (status, out) =
        if (!headers.get("authorization").contains(expected)) (403, Map("x-ms-error-code" -> "AuthenticationFailed"))
        else answer(ex.getRequestMethod, uri, headers)
      out.foreach { case (k, v) => ex.getResponseHeaders.add(k, v) }
      ex.sendResponseHeaders(status, -1)
      ex.close()
    })
    server.start()
    val url = s"http://127.0.0.1:${server.getAddress.getPort}/$account/ckpt"
    def stop(): Unit = server.stop(0)
  }

  private def withFake(answer: (String, String, Map[String, String]) => (Int, Map[String, String]))(
      body: (FakeBlob, AzureUploader) => Unit): Unit = {
    val fake = new FakeBlob(answer)
    try body(fake, new AzureUploader(new AzureBlobClient(fake.url, account, key), "h", 8, AzureUploader.Retries(baseDelayMs = 1L)))
    finally fake.stop()
  }

  test("a small create is one Put Blob with If-None-Match: * and the write id; a taken name is a conflict") {
    withFake { (_, _, h) =>
      if (h.contains("if-none-match")) (409, Map("x-ms-error-code" -> "BlobAlreadyExists")) else (201, Map.empty)
    } { (fake, uploader) =>
      val e = intercept[AzureBlobException](uploader.put("dir/0", "abc".getBytes, 3, ifNoneMatch = true, "w1"))
      assert(Failures.classify(e).name == Protocol.Conflict)
      uploader.put("dir/0", "abc".getBytes, 3, ifNoneMatch = false, "w2") // an overwrite: unconditional
      val requests = fake.seen
      assert(requests.size == 2)
      val (method, uri, headers, _) = requests.head
      assert(method == "PUT" && uri == s"/$account/ckpt/dir/0")
      assert(headers("if-none-match") == "*" && headers("x-ms-blob-type") == "BlockBlob")
      assert(headers(s"x-ms-meta-${Protocol.AzureWriteIdKey}") == "w1")
      assert(!requests(1)._3.contains("if-none-match"))
    }
  }

  test("throttling and 500s are retried; the write id is read back with Get Blob Properties") {
    var puts = 0
    withFake { (method, _, _) =>
      if (method == "PUT") {
        puts += 1
        if (puts == 1) (503, Map("x-ms-error-code" -> "ServerBusy"))
        else if (puts == 2) (500, Map("x-ms-error-code" -> "InternalError"))
        else (201, Map.empty)
      } else if (method == "HEAD") (200, Map(s"x-ms-meta-${Protocol.AzureWriteIdKey}" -> "w9"))
      else (404, Map("x-ms-error-code" -> "BlobNotFound"))
    } { (_, uploader) =>
      uploader.put("k", Array[Byte](1), 1, ifNoneMatch = true, "w9")
      assert(puts == 3)
      assert(uploader.writeId("k").contains("w9"))
      assert(uploader.isFile("k"))
      intercept[java.io.FileNotFoundException](uploader.delete("k"))
    }
  }

  test("Get Blob Properties: absent is None, a Hadoop folder marker is no file") {
    withFake { (_, uri, _) =>
      if (uri.endsWith("/dir")) (200, Map("x-ms-meta-hdi_isfolder" -> "true")) else (404, Map.empty)
    } { (_, uploader) =>
      assert(uploader.writeId("nothing").isEmpty)
      assert(!uploader.isFile("nothing"))
      assert(uploader.writeId("dir").contains(""))
      assert(!uploader.isFile("dir"))
    }
  }

  test("a large file is Put Blocks of the part size and one conditional Put Block List; nothing before it commits") {
    withFake((_, _, _) => (201, Map.empty)) { (fake, uploader) =>
      val data = "0123456789abcdefXYZ".getBytes(StandardCharsets.UTF_8) // 19 bytes, part size 8: 3 blocks
      uploader.putBlocks("big", data, data.length, ifNoneMatch = true, "w3")
      val requests = fake.seen
      assert(requests.map(r => r._2.replaceAll("blockid=.*", "blockid=")) ==
        Seq.fill(3)(s"/$account/ckpt/big?comp=block&blockid=") :+ s"/$account/ckpt/big?comp=blocklist")
      assert(requests.take(3).map(_._4) == Seq("01234567", "89abcdef", "XYZ"))
      val list = requests.last
      assert(list._3("if-none-match") == "*" && list._3(s"x-ms-meta-${Protocol.AzureWriteIdKey}") == "w3")
      assert(list._4.contains(s"<Latest>${AzureBlobClient.blockId("w3", 1)}</Latest>") &&
        list._4.contains(s"<Latest>${AzureBlobClient.blockId("w3", 3)}</Latest>"))
    }
  }

  test("a refused Put Block List drops the name's uncommitted blocks with a delete no committed blob meets") {
    withFake { (method, uri, _) =>
      if (uri.endsWith("comp=blocklist")) (409, Map("x-ms-error-code" -> "BlobAlreadyExists"))
      else if (method == "DELETE") (412, Map("x-ms-error-code" -> "ConditionNotMet"))
      else (201, Map.empty)
    } { (fake, uploader) =>
      val e = intercept[AzureBlobException](uploader.putBlocks("big", Array.fill[Byte](9)(1), 9, ifNoneMatch = true,
        "w4"))
      assert(e.code == "BlobAlreadyExists")
      val last = fake.seen.last
      assert(last._1 == "DELETE" && last._3("if-unmodified-since") == AzureBlobClient.LongAgo)
    }
  }

  test("abfs:// is written directly only over the Blob endpoint with a Shared Key; otherwise delegated, saying why") {
    val direct = AzureDirectStore.open(new FakeAbfs(new AbfsBlobClient("SharedKey")))
    assert(direct.isRight, direct)
    val opened = direct.toOption.get
    val store = opened.store.asInstanceOf[AzureDirectStore]
    assert(store.uploader.client.containerUrl == "http://127.0.0.1:10000/devstoreaccount1/ckpt")
    assert(store.uploader.client.account == "devstoreaccount1")
    assert(store.identity == StoreIdentity("http://127.0.0.1:10000/devstoreaccount1", "ckpt", "container"))
    assert(opened.check.first == StoreCheck.AzurePutBlob && opened.check.large == StoreCheck.AzureBlockList)
    // by design (another account kind, another auth): INFO; a connector the shim cannot drive: WARN (meant)
    val dfs = AzureDirectStore.open(new FakeAbfs(new AbfsDfsClient))
    assert(dfs.swap.toOption.exists(d => d.reason.contains("AbfsDfsClient") && !d.meant), dfs)
    val oauth = AzureDirectStore.open(new FakeAbfs(new AbfsBlobClient("OAuth")))
    assert(oauth.swap.toOption.exists(d => d.reason.contains("authorized with OAuth") && !d.meant), oauth)
    val badKey = AzureDirectStore.open(new FakeAbfs(new AbfsBlobClient("SharedKey"), key = "not base64!"))
    assert(badKey.swap.toOption.exists(_.meant), badKey)
    val notAbfs = new org.apache.hadoop.fs.RawLocalFileSystem
    assert(!AzureDirectStore.isAbfs(notAbfs))
    // no getAbfsStore: a call the shim needs is missing
    assert(AzureDirectStore.open(notAbfs).swap.toOption.exists(d => d.meant && d.reason.contains("lacks a call")))
  }

  test("the part size: fs.azure.write.request.size when set, else the protocol's") {
    val conf = new org.apache.hadoop.conf.Configuration(false)
    assert(AzureDirectStore.partSize(conf) == Protocol.PartSizeBytes)
    conf.set(AzureDirectStore.WriteRequestSizeKey, "256k")
    assert(AzureDirectStore.partSize(conf) == 256 * 1024)
  }

  test("retries: ABFS's retry settings where the user set them, else 6 attempts from 200 ms") {
    val conf = new org.apache.hadoop.conf.Configuration(false)
    assert(AzureUploader.Retries.from(conf) == AzureUploader.Retries(6, 200L, 30000L))
    conf.set("fs.azure.io.retry.max.retries", "12")
    conf.set("fs.azure.io.retry.min.backoff.interval", "5")
    conf.set("fs.azure.io.retry.max.backoff.interval", "50")
    assert(AzureUploader.Retries.from(conf) == AzureUploader.Retries(13, 5L, 50L))
    conf.set("fs.azure.io.retry.max.retries", "0")
    assert(AzureUploader.Retries.from(conf).attempts == 1)
  }

  test("back-off doubles from the base and stops at the longest delay") {
    var sleeps = 0
    val started = System.nanoTime()
    val e = intercept[java.io.IOException](Retry.withBackoff(4, 1L, onRetry = (_, _) => sleeps += 1, maxDelayMs = 2L) {
      throw new java.io.IOException("503")
    })
    assert(e.getMessage == "503" && sleeps == 3)
    assert(System.nanoTime() - started >= 5L * 1000000) // 1 + 2 + 2 ms: the third wait capped at 2
  }
}
