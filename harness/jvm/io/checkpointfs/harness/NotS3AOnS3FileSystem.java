package io.checkpointfs.harness;

import java.io.IOException;
import java.net.URI;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;

/**
 * A stand-in for EMR's EMRFS in tests: a Hadoop FileSystem serving {@code s3://} that is not S3A (its class and none
 * of its superclasses is S3AFileSystem), over the same bucket and keys. It wraps an S3AFileSystem made for the same
 * URI and {@code fs.s3a.*} settings, as a FilterFileSystem: every call is S3A's, but the shim sees a file system it
 * does not write (as on EMR, where {@code fs.s3.impl} is EMRFS). Select it with
 * {@code spark.hadoop.fs.s3.impl=io.checkpointfs.harness.NotS3AOnS3FileSystem}.
 */
public class NotS3AOnS3FileSystem extends FilterFileSystem {
  private static final String S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem";

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    Configuration inner = new Configuration(conf);
    inner.set("fs." + name.getScheme() + ".impl", S3A);
    this.fs = FileSystem.newInstance(name, inner);
    super.initialize(name, conf);
  }

  @Override
  public String getScheme() {
    return "s3";
  }
}
