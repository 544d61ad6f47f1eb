package io.checkpointfs.spark
package store
package azure

import java.io.IOException
import java.lang.reflect.InvocationTargetException

import org.apache.hadoop.fs.FileSystem

/**
 * Every call the shim makes into hadoop-azure's ABFS, in one place: by reflection (the shim is compiled without
 * hadoop-azure), one of them into a package-private method. Tested against hadoop-azure 3.4.2 (Spark 4.1) and 3.5.0
 * (Spark 4.2, 4.3), on Azurite (tests/backends/test_conformance_azure_shim.py, AzureBlobSuite); the jars of Spark 3.5
 * and 4.0 (hadoop-azure 3.3.4, 3.4.1) never call it (`compat.LineStore.openAzure`).
 *
 *  - `AzureBlobFileSystem` / `SecureAzureBlobFileSystem`: the file system classes, matched by name ([[isAbfs]]);
 *  - `AzureBlobFileSystem.getAbfsStore()` (public, `@VisibleForTesting`), then `AzureBlobFileSystemStore.getClient()`:
 *    the store's default client, whose class (`AbfsBlobClient` for a flat-namespace account over the Blob endpoint,
 *    `AbfsDfsClient` otherwise; `AbfsClient` before 3.4.2) and `getAuthType()` say whether the shim writes directly;
 *  - `AzureBlobFileSystemStore.getAbfsConfiguration()`: `getAccountName()`, `getStorageAccountKey()` (the Shared Key
 *    the shim signs its own Blob requests with);
 *  - `AbfsClient.getBaseUrl()`, package-private: the container's URL on the endpoint ABFS itself uses (an emulator's
 *    included), made accessible with `setAccessible`.
 *
 * A missing method or class is a ReflectiveOperationException or a LinkageError, and an IOException a call throws
 * becomes a ReflectiveOperationException: the caller leaves the scheme to Spark's manager, saying why.
 */
private[spark] final class Abfs private (abfsStore: AnyRef, client: AnyRef) {
  import Abfs._

  /** The simple class name of the store's default client (`AbfsBlobClient`, `AbfsDfsClient`, ...). */
  def clientClass: String = client.getClass.getSimpleName

  /** How the client authorizes its requests (`SharedKey`, `OAuth`, `SAS`, ...). */
  def authType: String = String.valueOf(call(client, "getAuthType"))

  private lazy val configuration: AnyRef = call(abfsStore, "getAbfsConfiguration")

  /** The account's host name (`<account>.blob.core.windows.net`, or an emulator's account name). */
  def accountName: String = String.valueOf(call(configuration, "getAccountName"))

  /** The account key as configured (base64 text). */
  def storageAccountKey: String = String.valueOf(call(configuration, "getStorageAccountKey"))

  /** The client's container URL (`getBaseUrl`, package-private in hadoop-azure). */
  def containerUrl: java.net.URL = {
    val method = Iterator.iterate[Class[_]](client.getClass)(_.getSuperclass).takeWhile(_ != null)
      .flatMap(c => c.getDeclaredMethods.find(m => m.getName == "getBaseUrl" && m.getParameterCount == 0))
      .toSeq.headOption.getOrElse(throw new NoSuchMethodException(s"${client.getClass.getName}.getBaseUrl()"))
    method.setAccessible(true)
    unwrapped(method.invoke(client)).asInstanceOf[java.net.URL]
  }
}

private[spark] object Abfs {
  private val AbfsClasses = Set("org.apache.hadoop.fs.azurebfs.AzureBlobFileSystem",
    "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem")

  /** Whether `fs` is hadoop-azure's ABFS (or a subclass), without loading its classes. */
  def isAbfs(fs: FileSystem): Boolean =
    Iterator.iterate[Class[_]](fs.getClass)(_.getSuperclass).takeWhile(_ != null).exists(c => AbfsClasses(c.getName))

  /** ABFS's store and default client behind `fs` (ABFS). */
  def apply(fs: FileSystem): Abfs = {
    val abfsStore = call(fs, "getAbfsStore")
    new Abfs(abfsStore, call(abfsStore, "getClient"))
  }

  private def call(target: AnyRef, name: String): AnyRef = unwrapped(target.getClass.getMethod(name).invoke(target))

  private def unwrapped(value: => AnyRef): AnyRef =
    try value
    catch {
      case e: InvocationTargetException if e.getCause != null => e.getCause match {
        case io: IOException => throw new ReflectiveOperationException(io.toString, io)
        case other => throw other
      }
    }
}
