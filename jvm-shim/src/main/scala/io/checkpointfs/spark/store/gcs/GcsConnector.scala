package io.checkpointfs.spark
package store
package gcs

import java.lang.reflect.{InvocationTargetException, Method}
import java.nio.ByteBuffer
import java.nio.channels.WritableByteChannel
import java.nio.charset.StandardCharsets

import org.apache.hadoop.fs.FileSystem

/**
 * Google's Cloud Storage connector for Hadoop (`com.google.cloud.bigdataoss:gcs-connector`, `hadoop3-2.2.x` and
 * `3.x`), reached by reflection: its storage layer (`com.google.cloud.hadoop.gcsio`) is relocated under
 * `com.google.cloud.hadoop.repackaged.gcs.` in the shaded jars and not in the plain ones, so the shim cannot be
 * compiled against either. Every class is found from the file system's own `getGcsFs().getGcs()` (the declared
 * return types, which are public: the implementations may not be), so both flavours work. The calls used have the
 * same signatures in 2.2.x and 3.1.x:
 *
 *  - `GoogleCloudStorage.create(StorageResourceId(bucket, key, generation), CreateObjectOptions)`: with a generation
 *    given (0: absent), the connector sends no existence probe and no directory conflict checks, and uploads with
 *    `ifGenerationMatch=<generation>`; the metadata map's values are base64-encoded on the wire;
 *  - `getItemInfo(StorageResourceId(bucket, key))`: one `objects.get` (metadata decoded back to bytes);
 *  - `deleteObjects(List(StorageResourceId(bucket, key)))`: the connector reads the object's generation first (one
 *    `objects.get`), then deletes conditionally on it;
 *  - `listObjectInfo(bucket, prefix, ListObjectOptions.DEFAULT)`: one `objects.list` with delimiter `/` a page.
 *
 * The connector retries a failed request itself (`fs.gs.http.max.retry`), out of the shim's sight.
 *
 * This is the shim's one adapter into Google's connector: every reflective call into it is made here (the file
 * system classes are matched by name: [[isGoogleConnector]], [[isHadoopGcp]]). Tested against gcs-connector
 * `hadoop3-2.2.28` (Hadoop 3.3.4, Spark 3.5) and `3.1.18` (Hadoop 3.4 and 3.5, Spark 4.0 to 4.3), shaded, on
 * fake-gcs-server (harness/servers/fake_gcs.py, tests/gcs, tests/backends/test_gcs_*.py).
 */
private[spark] final class GcsConnector private (val fs: FileSystem, gcs: AnyRef, api: GcsConnector.Api) {
  import GcsConnector._

  /** Create `bucket/key` with `ifGenerationMatch=generation` and the write id in its metadata, writing what
   * `write` sends to the channel; the object exists (and the request is answered) once this returns. Its
   * generation, or -1 when the connector does not tell. */
  def create(bucket: String, key: String, generation: Long, writeId: String)(write: WritableByteChannel => Unit): Long = {
    val id = api.resourceId3.newInstance(bucket, key, java.lang.Long.valueOf(generation)).asInstanceOf[AnyRef]
    var builder = call(null, api.builder)
    builder = call(builder, api.setOverwrite, java.lang.Boolean.valueOf(generation != 0L))
    builder = call(builder, api.setContentType, "application/octet-stream")
    val metadata = new java.util.HashMap[String, Array[Byte]]()
    metadata.put(Protocol.WriteIdKey, writeId.getBytes(StandardCharsets.UTF_8))
    builder = call(builder, api.setMetadata, metadata)
    val options = call(builder, api.build)
    val channel = call(gcs, api.create, id, options).asInstanceOf[WritableByteChannel]
    // Closing the channel finalizes the upload with what it was given, and the connector has no cancel: when `write`
    // fails (the upload failed, or the local copy could not be read) the channel is left unclosed, so a partial
    // object is never published; the unfinished request is dropped by the store.
    write(channel)
    channel.close()
    if (!api.itemProvider.isInstance(channel)) -1L
    else {
      val info = call(channel, api.providedItem)
      if (info == null) -1L else call(info, api.getGeneration).asInstanceOf[java.lang.Long].longValue
    }
  }

  /**
   * Exactly `length` bytes of generation `generation` of `bucket/key`, read with one `GET ...?alt=media&generation=`
   * and no metadata request before it (fast-fail on a missing object off); FileNotFoundException when that
   * generation is gone (replaced or deleted), None when it holds another length.
   */
  def read(bucket: String, key: String, generation: Long, length: Int): Option[Array[Byte]] = {
    val id = api.resourceId3.newInstance(bucket, key, java.lang.Long.valueOf(generation)).asInstanceOf[AnyRef]
    val channel = call(gcs, api.open, id, api.readOptions).asInstanceOf[java.nio.channels.ReadableByteChannel]
    try {
      val buffer = ByteBuffer.allocate(length + 1)
      var n = 0
      while (n >= 0 && buffer.hasRemaining) n = channel.read(buffer)
      if (buffer.position() != length) None else Some(java.util.Arrays.copyOf(buffer.array(), length))
    } finally channel.close()
  }

  /** The object's (generation, write id): None when absent; the id is "" when it carries none. */
  def item(bucket: String, key: String): Option[(Long, String)] = {
    val info = call(gcs, api.getItemInfo, api.resourceId2.newInstance(bucket, key).asInstanceOf[AnyRef])
    if (!call(info, api.exists).asInstanceOf[Boolean]) None
    else {
      val metadata = call(info, api.getMetadata).asInstanceOf[java.util.Map[String, Array[Byte]]]
      val id = Option(metadata).flatMap(m => Option(m.get(Protocol.WriteIdKey)))
        .map(new String(_, StandardCharsets.UTF_8)).getOrElse("")
      Some((call(info, api.getGeneration).asInstanceOf[java.lang.Long].longValue, id))
    }
  }

  /**
   * What lies directly below `prefix` (ending in `/`): (object name, is a directory, size, modification time ms),
   * from one listing with delimiter `/` (one request a page of the connector's size); the directory's own
   * placeholder object is left out.
   */
  def list(bucket: String, prefix: String): Seq[GcsConnector.Item] = {
    val items = call(gcs, api.listObjectInfo, bucket, prefix, api.listOptions).asInstanceOf[java.util.List[AnyRef]]
    val out = Seq.newBuilder[GcsConnector.Item]
    def long(info: AnyRef, m: Method): Long = call(info, m).asInstanceOf[java.lang.Long].longValue
    items.forEach { info =>
      val name = call(info, api.getObjectName).asInstanceOf[String]
      if (name != null && name != prefix) {
        out += GcsConnector.Item(name, call(info, api.isDirectory).asInstanceOf[Boolean], long(info, api.getSize),
          long(info, api.getModificationTime), long(info, api.getGeneration))
      }
    }
    out.result()
  }

  /**
   * Delete `bucket/key`: of that `generation` when known (one request; a 412 when it was replaced), else whatever is
   * there (the connector reads its generation first: two requests); FileNotFoundException when it is absent.
   */
  def delete(bucket: String, key: String, generation: Long = -1L): Unit = {
    val id = (if (generation > 0) api.resourceId3.newInstance(bucket, key, java.lang.Long.valueOf(generation))
      else api.resourceId2.newInstance(bucket, key)).asInstanceOf[AnyRef]
    call(gcs, api.deleteObjects, java.util.Collections.singletonList(id))
  }
}

private[spark] object GcsConnector {
  /** One entry of a listing: an object (or a directory, `isDirectory`, its name ending in `/`). */
  final case class Item(name: String, isDirectory: Boolean, size: Long, modificationTime: Long, generation: Long)

  /** The class names of Google's connector (2.2.x: `GoogleHadoopFileSystem` extends `GoogleHadoopFileSystemBase`). */
  val FileSystemClasses: Set[String] = Set("com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
    "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystemBase")
  /** Hadoop 3.5's own connector (hadoop-gcp). */
  val HadoopGcpClass = "org.apache.hadoop.fs.gs.GoogleHadoopFileSystem"

  private def classChain(fs: FileSystem): Iterator[Class[_]] =
    Iterator.iterate[Class[_]](fs.getClass)(_.getSuperclass).takeWhile(_ != null)

  /** Whether `fs` is Google's connector (or a subclass), without loading its classes. */
  def isGoogleConnector(fs: FileSystem): Boolean = classChain(fs).exists(c => FileSystemClasses.contains(c.getName))

  /** Whether `fs` is Hadoop 3.5's hadoop-gcp (or a subclass). */
  def isHadoopGcp(fs: FileSystem): Boolean = classChain(fs).exists(_.getName == HadoopGcpClass)

  /** The methods and constructors used, resolved once per connector class. */
  private final case class Api(
      resourceId2: java.lang.reflect.Constructor[_], resourceId3: java.lang.reflect.Constructor[_],
      builder: Method, setOverwrite: Method, setContentType: Method, setMetadata: Method, build: Method,
      create: Method, getItemInfo: Method, deleteObjects: Method, listObjectInfo: Method, listOptions: AnyRef,
      open: Method, readOptions: AnyRef, itemProvider: Class[_], providedItem: Method,
      exists: Method, getMetadata: Method, getGeneration: Method, getObjectName: Method, isDirectory: Method,
      getSize: Method, getModificationTime: Method)

  /**
   * The connector's storage layer behind `fs` (Google's connector); a ReflectiveOperationException naming what is
   * missing when this connector version lacks a call the shim needs (the caller then leaves the scheme to Spark's
   * manager).
   */
  def apply(fs: FileSystem): GcsConnector = {
    val gcsFsMethod = fs.getClass.getMethod("getGcsFs")
    val gcsFs = call(fs, gcsFsMethod)
    val getGcs = gcsFsMethod.getReturnType.getMethod("getGcs")
    val gcs = call(gcsFs, getGcs)
    val storage = getGcs.getReturnType
    val prefix = storage.getName.substring(0, storage.getName.lastIndexOf('.') + 1)
    val loader = storage.getClassLoader
    val resourceId = Class.forName(prefix + "StorageResourceId", true, loader)
    val options = Class.forName(prefix + "CreateObjectOptions", true, loader)
    val itemInfo = Class.forName(prefix + "GoogleCloudStorageItemInfo", true, loader)
    val listOptions = Class.forName(prefix + "ListObjectOptions", true, loader)
    val readOptionsClass = Class.forName(prefix + "GoogleCloudStorageReadOptions", true, loader)
    val readBuilderMethod = readOptionsClass.getMethod("builder")
    val readBuilderClass = readBuilderMethod.getReturnType
    val readBuilder = call(null, readBuilderMethod)
    // 3.x: setFastFailOnNotFoundEnabled; 2.2.x: setFastFailOnNotFound
    val fastFail = Seq("setFastFailOnNotFoundEnabled", "setFastFailOnNotFound").iterator
      .map(n => scala.util.Try(readBuilderClass.getMethod(n, java.lang.Boolean.TYPE)).toOption)
      .collectFirst { case Some(m) => m }
      .getOrElse(throw new NoSuchMethodException("GoogleCloudStorageReadOptions.Builder.setFastFailOnNotFound"))
    val build = readBuilderClass.getMethod("build")
    val readOptions = call(call(readBuilder, fastFail, java.lang.Boolean.FALSE), build)
    val provider = Class.forName(prefix + "GoogleCloudStorageItemInfo$Provider", true, loader)
    val builder = options.getMethod("builder")
    val builderClass = builder.getReturnType
    val api = Api(
      resourceId.getConstructor(classOf[String], classOf[String]),
      resourceId.getConstructor(classOf[String], classOf[String], java.lang.Long.TYPE),
      builder,
      builderClass.getMethod("setOverwriteExisting", java.lang.Boolean.TYPE),
      builderClass.getMethod("setContentType", classOf[String]),
      builderClass.getMethod("setMetadata", classOf[java.util.Map[_, _]]),
      builderClass.getMethod("build"),
      storage.getMethod("create", resourceId, options),
      storage.getMethod("getItemInfo", resourceId),
      storage.getMethod("deleteObjects", classOf[java.util.List[_]]),
      storage.getMethod("listObjectInfo", classOf[String], classOf[String], listOptions),
      listOptions.getField("DEFAULT").get(null), // delimiter "/", every page
      storage.getMethod("open", resourceId, readOptionsClass), readOptions, provider, provider.getMethod("getItemInfo"),
      itemInfo.getMethod("exists"), itemInfo.getMethod("getMetadata"), itemInfo.getMethod("getContentGeneration"),
      itemInfo.getMethod("getObjectName"), itemInfo.getMethod("isDirectory"), itemInfo.getMethod("getSize"),
      itemInfo.getMethod("getModificationTime"))
    new GcsConnector(fs, gcs, api)
  }

  /** Invoke `method`, rethrowing what it threw (an IOException stays one). */
  private def call(target: AnyRef, method: Method, args: AnyRef*): AnyRef =
    try method.invoke(target, args: _*)
    catch {
      case e: InvocationTargetException if e.getCause != null => throw e.getCause
    }

  /** Write all of `buffer` to `channel`. */
  def writeFully(channel: WritableByteChannel, buffer: ByteBuffer): Unit =
    while (buffer.hasRemaining) channel.write(buffer)
}
