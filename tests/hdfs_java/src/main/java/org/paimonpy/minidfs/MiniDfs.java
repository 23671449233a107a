package org.paimonpy.minidfs;

import java.io.File;
import java.io.InputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * One NameNode and one DataNode on 127.0.0.1 (free ports), WebHDFS on, permissions off.
 *
 * <p>Usage: {@code java -cp ... org.paimonpy.minidfs.MiniDfs BASE_DIR}. Prints one JSON line
 * {@code {"rpc_port": N, "http_port": M}} once the cluster is up, then runs until stdin closes
 * (the test process exiting closes it), so a killed test run never leaves a NameNode behind.
 */
public final class MiniDfs {
    private MiniDfs() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: MiniDfs BASE_DIR");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
        // loopback only: every address the cluster binds or hands out (WebHDFS redirects to the
        // DataNode's HTTP address) is 127.0.0.1
        conf.set("dfs.namenode.rpc-address", "127.0.0.1:0");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.setBoolean("dfs.webhdfs.enabled", true);
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.setInt("dfs.replication", 1);
        // small files are the tests' whole load: no 128 MiB preallocation per block
        conf.setLong("dfs.blocksize", 1024L * 1024L);
        conf.setLong("dfs.namenode.fs-limits.min-block-size", 1024L);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
            .numDataNodes(1)
            .nameNodePort(0)
            .nameNodeHttpPort(0)
            .checkDataNodeHostConfig(true)
            .format(true)
            .build();
        cluster.waitActive();
        int rpc = cluster.getNameNodePort();
        int http = cluster.getNameNode().getHttpAddress().getPort();
        System.out.println("{\"rpc_port\": " + rpc + ", \"http_port\": " + http + "}");
        System.out.flush();
        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // wait for EOF
        }
        cluster.shutdown(true);
        System.exit(0);
    }
}
