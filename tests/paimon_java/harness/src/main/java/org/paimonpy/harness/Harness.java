package org.paimonpy.harness;

import org.apache.paimon.Snapshot;
import org.apache.paimon.append.AppendCompactCoordinator;
import org.apache.paimon.append.AppendCompactTask;
import org.apache.paimon.bucket.BucketFunction;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.JoinedRow;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.format.FileFormat;
import org.apache.paimon.format.FormatReaderContext;
import org.apache.paimon.format.FormatReaderFactory;
import org.apache.paimon.format.FormatWriter;
import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.fs.PositionOutputStream;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.operation.BaseAppendFileStoreWrite;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.postpone.BucketFiles;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.SpecialFields;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.snapshot.SnapshotReader;
import org.apache.paimon.table.source.ScanMode;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Drives Apache Paimon's Java implementation for this project's interop tests, conformance target
 * and benchmark.
 *
 * <p>Two modes. {@code serve}: a JSON-lines server, one request per stdin line {@code {"id": n,
 * "op": "...", "args": {...}}}, one response per stdout line {@code {"id": n, "ok": true,
 * "result": ...}} or {@code {"id": n, "ok": false, "error_class": ..., "message": ...,
 * "conflict": bool, "traceback": ...}}; it ends when stdin closes or on {@code close}. Anything
 * else Paimon prints goes to stderr (System.out is redirected), so stdout carries only the
 * protocol. One-shot: {@code Harness OP 'ARGS-JSON'} prints the same response line.
 *
 * <p>Rows travel as Parquet files: Paimon's own Parquet reader reads the input with the table's
 * row type, and its Parquet writer writes read results (so no per-type value conversion lives
 * here for bulk data); the conformance target's small tables of simple types use JSON rows
 * (prepare, overwrite, read_rows). Every op names its table by {@code warehouse} (a filesystem
 * catalog) and {@code table} ("db.name"); {@code options} are dynamic options for the call;
 * {@code catalog_options}, when given, are added to that catalog's options (e.g. {@code
 * hadoop.fs.azure.account.key.*} for a {@code wasb://} warehouse), and a catalog is kept per
 * warehouse and catalog options.
 */
public final class Harness {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Commit messages written by prepare and not yet committed, by handle. */
    private final Map<String, List<CommitMessage>> prepared = new HashMap<>();

    private long handles = 0;

    /** One filesystem catalog per warehouse, kept for the server's life. */
    private final Map<String, Catalog> catalogs = new HashMap<>();

    /**
     * Spill and lookup files: first-row and lookup-changelog tables need a temp disk (Paimon
     * refuses "Can not use lookup, there is no temp disk directory to use" without one).
     */
    private static final IOManager IO_MANAGER =
            IOManager.create(System.getProperty("java.io.tmpdir"));

    public static void main(String[] argv) throws Exception {
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        // Paimon and its libraries log or print; keep stdout for the protocol only.
        System.setOut(System.err);
        // IOManager.create makes a paimon-io-<uuid> directory under java.io.tmpdir; closing it on
        // exit removes it (one was left behind per JVM otherwise).
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                IO_MANAGER.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }));
        Harness harness = new Harness();
        if (argv.length >= 1 && !argv[0].equals("serve")) {
            ObjectNode req = JSON.createObjectNode();
            req.put("id", 0);
            req.put("op", argv[0]);
            req.set("args", argv.length > 1 ? JSON.readTree(argv[1]) : JSON.createObjectNode());
            ObjectNode resp = harness.handle(req);
            protocol.println(JSON.writeValueAsString(resp));
            System.exit(resp.get("ok").asBoolean() ? 0 : 1);
        }
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode req = JSON.readTree(line);
            if ("close".equals(req.path("op").asText())) {
                ObjectNode resp = JSON.createObjectNode();
                resp.set("id", req.get("id"));
                resp.put("ok", true);
                resp.putNull("result");
                protocol.println(JSON.writeValueAsString(resp));
                break;
            }
            protocol.println(JSON.writeValueAsString(harness.handle(req)));
        }
        harness.closeAll();
        System.exit(0);
    }

    ObjectNode handle(JsonNode req) {
        ObjectNode resp = JSON.createObjectNode();
        resp.set("id", req.get("id"));
        String op = req.path("op").asText();
        JsonNode args = req.path("args");
        try {
            JsonNode result = dispatch(op, args);
            resp.put("ok", true);
            resp.set("result", result);
        } catch (Throwable t) {
            resp.put("ok", false);
            resp.put("error_class", t.getClass().getName());
            resp.put("message", String.valueOf(t.getMessage()));
            resp.put("conflict", isConflict(t));
            StringWriter sw = new StringWriter();
            t.printStackTrace(new PrintWriter(sw));
            resp.put("traceback", sw.toString());
        }
        return resp;
    }

    private JsonNode dispatch(String op, JsonNode a) throws Exception {
        switch (op) {
            case "ping":
                return JSON.getNodeFactory().textNode("pong");
            case "create_table":
                return createTable(a);
            case "write":
                return write(a);
            case "compact":
                return compact(a);
            case "postpone_compact":
                return postponeCompact(a);
            case "expire":
                return expire(a);
            case "alter":
                return alter(a);
            case "create_tag":
                return createTag(a);
            case "delete_tag":
                return deleteTag(a);
            case "rollback":
                return rollback(a);
            case "create_branch":
                return createBranch(a);
            case "fast_forward":
                table(a).fastForward(a.get("name").asText());
                return JSON.getNodeFactory().nullNode();
            case "read":
                return read(a);
            case "metadata":
                return metadata(a);
            case "key_vectors":
                return keyVectors(a);
            case "prepare":
                return prepare(a);
            case "commit":
                return commitPrepared(a);
            case "overwrite":
                return overwrite(a);
            case "update_by_row_id":
                return updateByRowId(a);
            case "read_rows":
                return readRows(a);
            case "snapshot_ids":
                return snapshotIds(a);
            case "index_filter":
                return indexFilter(a);
            case "jdbc":
                return JdbcOps.run(a);
            case "rest":
                return RestOps.run(a);
            case "partition_paths":
                return PathOps.partitionPaths(a);
            case "buckets":
                return PathOps.buckets(a);
            case "option_keys":
                return optionKeys(a);
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    /**
     * Whether Paimon refused a commit because of a conflict it detected. Paimon Java raises
     * RuntimeException "File deletion conflicts detected! Give up committing." (ConflictDetection)
     * or "... conflicts during commits ..." when retries run out (FileStoreCommitImpl); the message
     * (of the error or a cause) decides.
     */
    static boolean isConflict(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = String.valueOf(c.getMessage()).toLowerCase();
            if (m.contains("conflict")) {
                return true;
            }
        }
        return false;
    }

    // ------------------------------------------------------------------ helpers

    private Catalog catalog(JsonNode a) {
        String warehouse = a.get("warehouse").asText();
        Map<String, String> extra = stringMap(a.path("catalog_options"));
        return catalogs.computeIfAbsent(
                extra.isEmpty() ? warehouse : warehouse + " " + new TreeMap<>(extra),
                key -> {
                    Options options = new Options();
                    extra.forEach(options::set);
                    options.set("warehouse", warehouse);
                    // No table cache: impl changes the same tables (schemas, tags, branches)
                    // between requests, and a cached table would keep its old schema.
                    options.set("cache-enabled", "false");
                    return CatalogFactory.createCatalog(CatalogContext.create(options));
                });
    }

    private FileStoreTable table(JsonNode a) throws Exception {
        Table t = catalog(a).getTable(Identifier.fromString(a.get("table").asText()));
        FileStoreTable table = (FileStoreTable) t;
        Map<String, String> dyn = stringMap(a.path("options"));
        return dyn.isEmpty() ? table : table.copy(dyn);
    }

    private void closeAll() {
        for (Catalog c : catalogs.values()) {
            try {
                c.close();
            } catch (Exception ignore) {
                // closing at exit: nothing left to report to
            }
        }
    }

    private static Map<String, String> stringMap(JsonNode node) {
        Map<String, String> out = new LinkedHashMap<>();
        if (node != null && node.isObject()) {
            node.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        }
        return out;
    }

    private static List<String> stringList(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null && node.isArray()) {
            node.forEach(n -> out.add(n.asText()));
        }
        return out;
    }

    /** Fields as [[name, "SQL TYPE"], ...], the type strings of Paimon's schema files. */
    private static RowType rowType(JsonNode fields) {
        List<DataField> out = new ArrayList<>();
        int i = 0;
        for (JsonNode f : fields) {
            DataType type = DataTypeJsonParser.parseAtomicTypeSQLString(f.get(1).asText());
            out.add(new DataField(i++, f.get(0).asText(), type));
        }
        return new RowType(out);
    }

    /** Every row of a Parquet file, read by Paimon's Parquet reader as {@code type}. */
    /**
     * Column updates of a data-evolution table by row id, as Flink's
     * DataEvolutionPartialWriteOperator writes them. Args: parquet (the update columns and
     * _ROW_ID), columns. For each file group (first row id) an update touches, one file holding
     * the update columns for the whole group (the old values where no update names a row),
     * given the group's first row id, committed together in one snapshot.
     */
    private JsonNode updateByRowId(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        List<String> cols = stringList(a.get("columns"));
        RowType writeType = table.rowType().project(cols);
        List<String> withId = new ArrayList<>(cols);
        withId.add(SpecialFields.ROW_ID.name());
        RowType dataType = SpecialFields.rowTypeWithRowId(table.rowType()).project(withId);
        int idPos = cols.size();
        Map<Long, InternalRow> updates = new HashMap<>();
        for (InternalRow r : readParquet(a.get("parquet").asText(), dataType)) {
            updates.put(r.getLong(idPos), r);
        }
        java.util.TreeMap<Long, List<DataFileMeta>> groups = new java.util.TreeMap<>();
        Map<Long, BinaryRow> partitions = new HashMap<>();
        for (ManifestEntry e : table.store().newScan().plan().files()) {
            Long first = e.file().firstRowId();
            if (first != null) {
                groups.computeIfAbsent(first, k -> new ArrayList<>()).add(e.file());
                partitions.put(first, e.partition());
            }
        }
        InternalRowSerializer serializer = new InternalRowSerializer(dataType);
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        List<CommitMessage> messages = new ArrayList<>();
        for (Map.Entry<Long, List<DataFileMeta>> g : groups.entrySet()) {
            long first = g.getKey();
            long count = g.getValue().get(0).rowCount();
            boolean touched = false;
            for (long id = first; id < first + count && !touched; id++) {
                touched = updates.containsKey(id);
            }
            if (!touched) {
                continue;
            }
            BinaryRow partition = partitions.get(first);
            DataSplit split = DataSplit.builder().withPartition(partition).withBucket(0)
                    .withDataFiles(g.getValue())
                    .withBucketPath(table.store().pathFactory().bucketPath(partition, 0).toString())
                    .rawConvertible(false).build();
            List<InternalRow> merged = new ArrayList<>();
            try (RecordReader<InternalRow> reader =
                    table.newRead().withReadType(dataType).createReader(split)) {
                reader.forEachRemaining(r -> {
                    InternalRow u = updates.get(r.getLong(idPos));
                    merged.add(serializer.copy(u != null ? u : r));
                });
            }
            try (BatchTableWrite write = builder.newWrite().withWriteType(writeType)) {
                for (InternalRow r : merged) {
                    GenericRow row = new GenericRow(cols.size());
                    for (int i = 0; i < cols.size(); i++) {
                        row.setField(i, InternalRow.createFieldGetter(writeType.getTypeAt(i), i).getFieldOrNull(r));
                    }
                    write.write(row);
                }
                for (CommitMessage m : write.prepareCommit()) {
                    CommitMessageImpl c = (CommitMessageImpl) m;
                    List<DataFileMeta> files = new ArrayList<>();
                    for (DataFileMeta f : c.newFilesIncrement().newFiles()) {
                        files.add(f.assignFirstRowId(first));
                    }
                    messages.add(new CommitMessageImpl(c.partition(), c.bucket(), c.totalBuckets(),
                            new DataIncrement(files, new ArrayList<>(), new ArrayList<>()),
                            c.compactIncrement()));
                }
            }
        }
        try (BatchTableCommit commit = builder.newCommit()) {
            commit.commit(messages);
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("files", messages.size());
        return out;
    }

    static List<InternalRow> readParquet(String path, RowType type) throws Exception {
        LocalFileIO io = LocalFileIO.create();
        Path p = new Path(path);
        FormatReaderFactory factory =
                FileFormat.fromIdentifier("parquet", new Options())
                        .createReaderFactory(type, type, null);
        InternalRowSerializer serializer = new InternalRowSerializer(type);
        List<InternalRow> rows = new ArrayList<>();
        try (RecordReader<InternalRow> reader =
                factory.createReader(new FormatReaderContext(io, p, io.getFileSize(p)))) {
            // The reader reuses its row objects: keep copies.
            reader.forEachRemaining(r -> rows.add(serializer.copy(r)));
        }
        return rows;
    }

    /**
     * A stream commit for the request's commit_user. Unlike StreamWriteBuilder.newCommit (which
     * turns ignoreEmptyCommit off, as Flink checkpoints need), an empty commit creates no
     * snapshot unless ignore_empty_commit=false: a full compaction of an already compacted
     * bucket then leaves the snapshot list alone, as impl does.
     */
    private static StreamTableCommit streamCommit(FileStoreTable table, JsonNode a) {
        String user = a.path("commit_user").asText("paimon-java-harness");
        return table.newCommit(user).ignoreEmptyCommit(a.path("ignore_empty_commit").asBoolean(true));
    }

    /**
     * Writes rows through {@code write}. Dynamic-bucket primary-key tables (bucket = -1) need a
     * bucket per row from Paimon's HashBucketAssigner (its Flink sink runs one as an operator
     * before the writer): one assigner (a single channel) per call, over the table's hash index,
     * keyed by the commit user, and told of the commit identifier before the commit.
     */
    private static void writeRows(
            FileStoreTable table, org.apache.paimon.table.sink.TableWrite write, List<InternalRow> rows,
            String commitUser, long identifier)
            throws Exception {
        if (table.bucketMode() == org.apache.paimon.table.BucketMode.KEY_DYNAMIC) {
            writeCrossPartition(table, write, rows);
            return;
        }
        if (table.bucketMode() != org.apache.paimon.table.BucketMode.HASH_DYNAMIC) {
            for (InternalRow r : rows) {
                write.write(r);
            }
            return;
        }
        org.apache.paimon.index.HashBucketAssigner assigner =
                new org.apache.paimon.index.HashBucketAssigner(
                        table.snapshotManager(),
                        commitUser,
                        table.store().newIndexFileHandler(),
                        1,
                        1,
                        0,
                        table.coreOptions().dynamicBucketTargetRowNum(),
                        table.coreOptions().dynamicBucketMaxBuckets());
        org.apache.paimon.table.sink.DynamicBucketRowKeyExtractor extractor =
                new org.apache.paimon.table.sink.DynamicBucketRowKeyExtractor(table.schema());
        for (InternalRow r : rows) {
            extractor.setRecord(r);
            int bucket =
                    assigner.assign(extractor.partition(), extractor.trimmedPrimaryKey().hashCode());
            write.write(r, bucket);
        }
        assigner.prepareCommit(identifier);
    }

    /**
     * Cross-partition upserts (primary key without a partition key, bucket -1), as Flink's sink
     * runs them with one assigner: Paimon's GlobalIndexAssigner bootstrapped from the table's keys
     * (IndexBootstrap), then each row through it; it emits the rows (and the DELETEs of keys
     * moving partition) with their buckets.
     */
    private static void writeCrossPartition(
            FileStoreTable table, org.apache.paimon.table.sink.TableWrite write, List<InternalRow> rows)
            throws Exception {
        org.apache.paimon.crosspartition.GlobalIndexAssigner assigner =
                new org.apache.paimon.crosspartition.GlobalIndexAssigner(table);
        try {
            assigner.open(
                    64L << 20,
                    IO_MANAGER,
                    1,
                    0,
                    (row, bucket) -> {
                        try {
                            write.write(row, bucket);
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
            new org.apache.paimon.crosspartition.IndexBootstrap(table)
                    .bootstrap(
                            1,
                            0,
                            row -> {
                                try {
                                    assigner.bootstrapKey(row);
                                } catch (java.io.IOException e) {
                                    throw new RuntimeException(e);
                                }
                            });
            assigner.endBoostrap(false);
            for (InternalRow r : rows) {
                assigner.processInput(r);
            }
        } finally {
            assigner.close();
        }
    }

    private static RowKind rowKind(String shortString) {
        return RowKind.fromShortString(shortString);
    }

    // ------------------------------------------------------------------ ops

    private JsonNode createTable(JsonNode a) throws Exception {
        Catalog catalog = catalog(a);
        Identifier id = Identifier.fromString(a.get("table").asText());
        catalog.createDatabase(id.getDatabaseName(), true);
        RowType type = rowType(a.get("fields"));
        Schema.Builder b = Schema.newBuilder();
        for (DataField f : type.getFields()) {
            b.column(f.name(), f.type());
        }
        b.partitionKeys(stringList(a.path("partition_keys")));
        b.primaryKey(stringList(a.path("primary_keys")));
        b.options(stringMap(a.path("table_options")));
        catalog.createTable(id, b.build(), a.path("ignore_if_exists").asBoolean(false));
        return JSON.getNodeFactory().nullNode();
    }

    /**
     * Writes the rows of a Parquet file and commits them once. Args: parquet (path), row_kinds
     * (optional list of "+I"/"-U"/"+U"/"-D", one per row), commit_user, identifier (stream
     * commit), or batch=true (BatchWriteBuilder, optionally overwrite={partition spec}).
     * Timing excludes reading the input: write_ms covers write + prepareCommit, commit_ms the
     * commit.
     */
    private JsonNode write(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        List<InternalRow> rows = readParquet(a.get("parquet").asText(), table.rowType());
        List<String> kinds = stringList(a.path("row_kinds"));
        if (!kinds.isEmpty() && kinds.size() != rows.size()) {
            throw new IllegalArgumentException(
                    "row_kinds has " + kinds.size() + " entries for " + rows.size() + " rows");
        }
        for (int i = 0; i < kinds.size(); i++) {
            rows.get(i).setRowKind(rowKind(kinds.get(i)));
        }
        ObjectNode out = JSON.createObjectNode();
        long t0 = System.nanoTime();
        if (a.path("batch").asBoolean(false)) {
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            if (a.has("overwrite")) {
                builder = builder.withOverwrite(stringMap(a.get("overwrite")));
            }
            try (BatchTableWrite write = builder.newWrite().withIOManager(IO_MANAGER);
                    BatchTableCommit commit = builder.newCommit()) {
                // BatchWriteBuilder keeps its (random) commit user private; the assigner only
                // uses its user to pick up its own previous assignments, which a batch has none of.
                writeRows(table, write, rows, "paimon-java-harness-batch", Long.MAX_VALUE);
                List<CommitMessage> messages = write.prepareCommit();
                long t1 = System.nanoTime();
                commit.commit(messages);
                out.put("write_ms", (t1 - t0) / 1e6);
                out.put("commit_ms", (System.nanoTime() - t1) / 1e6);
            }
        } else {
            StreamWriteBuilder builder =
                    table.newStreamWriteBuilder().withCommitUser(a.get("commit_user").asText());
            long identifier = a.get("identifier").asLong();
            try (StreamTableWrite write = (StreamTableWrite) builder.newWrite().withIOManager(IO_MANAGER);
                    StreamTableCommit commit = streamCommit(table, a)) {
                writeRows(table, write, rows, builder.commitUser(), identifier);
                // Lookup tables (first-row, lookup changelog, deletion vectors) compact level 0
                // away before the commit, as Flink's writer does with lookup-wait (default
                // true): their batch scans skip level 0 (CoreOptions.batchScanSkipLevel0).
                boolean wait =
                        a.path("wait_compaction").asBoolean(table.coreOptions().needLookup());
                List<CommitMessage> messages = write.prepareCommit(wait, identifier);
                long t1 = System.nanoTime();
                commit.commit(identifier, messages);
                out.put("write_ms", (t1 - t0) / 1e6);
                out.put("commit_ms", (System.nanoTime() - t1) / 1e6);
            }
        }
        out.put("rows", rows.size());
        Long latest = table.snapshotManager().latestSnapshotId();
        if (latest == null) {
            out.putNull("snapshot_id");
        } else {
            out.put("snapshot_id", latest);
        }
        return out;
    }

    /**
     * Compacts every (partition, bucket) of the latest snapshot and commits once. Args: full
     * (default true), commit_user, identifier. Bucketed tables go through TableWrite.compact;
     * bucket-unaware append tables (bucket = -1) through AppendCompactCoordinator.
     */
    private JsonNode compact(JsonNode a) throws Exception {
        // A dedicated compaction job, as Paimon's compact action runs it: write-only (which
        // turns the writers' compaction off) does not apply to it.
        Map<String, String> job = new HashMap<>();
        job.put("write-only", "false");
        FileStoreTable table = table(a).copy(job);
        long t0 = System.nanoTime();
        Long before = table.snapshotManager().latestSnapshotId();
        boolean full = a.path("full").asBoolean(true);
        String user = a.path("commit_user").asText("paimon-java-harness");
        long identifier = a.path("identifier").asLong(Long.MAX_VALUE);
        StreamWriteBuilder builder = table.newStreamWriteBuilder().withCommitUser(user);
        List<CommitMessage> messages = new ArrayList<>();
        if (table.schema().numBuckets() == -1 && table.primaryKeys().isEmpty()) {
            // Unaware-bucket append: the coordinator plans compaction tasks over small files.
            BaseAppendFileStoreWrite write =
                    (BaseAppendFileStoreWrite) table.store().newWrite(user);
            if (table.coreOptions().rowTrackingEnabled()) {
                // as Flink's AppendTableCompactor: the rewritten files keep the rows' ids and
                // sequence numbers in physical _ROW_ID / _SEQUENCE_NUMBER columns
                write.withWriteType(SpecialFields.rowTypeWithRowTracking(table.rowType()));
            }
            try {
                List<AppendCompactTask> tasks;
                try {
                    tasks = new AppendCompactCoordinator(table, false).run();
                } catch (org.apache.paimon.table.source.EndOfScanException e) {
                    // A batch coordinator's scan ends at once on a table without snapshots:
                    // nothing to compact (Flink's batch compact job ends the same way).
                    tasks = new ArrayList<>();
                }
                for (AppendCompactTask task : tasks) {
                    messages.add(task.doCompact(table, write));
                }
            } finally {
                write.close();
            }
            try (StreamTableCommit commit = streamCommit(table, a)) {
                commit.commit(identifier, messages);
            }
        } else {
            Map<String, BinaryRow> partitions = new LinkedHashMap<>();
            Map<String, Integer> buckets = new LinkedHashMap<>();
            Iterator<ManifestEntry> it = table.newSnapshotReader().readFileIterator();
            while (it.hasNext()) {
                ManifestEntry e = it.next();
                String key = e.partition().toString() + "/" + e.bucket();
                partitions.putIfAbsent(key, e.partition().copy());
                buckets.putIfAbsent(key, e.bucket());
            }
            try (StreamTableWrite write = (StreamTableWrite) builder.newWrite().withIOManager(IO_MANAGER);
                    StreamTableCommit commit = streamCommit(table, a)) {
                for (String key : partitions.keySet()) {
                    write.compact(partitions.get(key), buckets.get(key), full);
                }
                commit.commit(identifier, write.prepareCommit(true, identifier));
            }
        }
        ObjectNode out = JSON.createObjectNode();
        Long latest = table.snapshotManager().latestSnapshotId();
        out.put("snapshot_id", latest == null ? -1 : latest);
        out.put("compact_ms", (System.nanoTime() - t0) / 1e6);
        // The snapshots this compaction published (none when there was nothing to compact).
        out.set("snapshot_ids", ownSnapshots(table, before, user, identifier));
        return out;
    }

    /**
     * Postpone bucket compaction (bucket = -2), as Paimon's Flink CompactAction runs it with core
     * APIs: per partition with postponed files, the bucket count is its real buckets' count, else
     * postpone.default-bucket-num; the postponed files are replayed by creation time without
     * merging into a fixed-bucket writer restored from the real buckets; BucketFiles folds the
     * removals and the writers' files into compact messages, committed as one snapshot.
     */
    private JsonNode postponeCompact(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        Long before = table.snapshotManager().latestSnapshotId();
        String user = a.path("commit_user").asText("paimon-java-harness");
        long identifier = a.path("identifier").asLong(Long.MAX_VALUE);
        int defaultBucketNum = new Options(table.options()).get(CoreOptions.POSTPONE_DEFAULT_BUCKET_NUM);
        Map<String, String> opts = new HashMap<>(table.options());
        opts.put(CoreOptions.BUCKET.key(), String.valueOf(defaultBucketNum));
        FileStoreTable commitTable = table.copy(table.schema().copy(opts));
        List<BinaryRow> partitions =
                commitTable.newSnapshotReader().withBucket(BucketMode.POSTPONE_BUCKET).partitions();
        List<CommitMessage> all = new ArrayList<>();
        for (BinaryRow partition : partitions) {
            int bucketNum = defaultBucketNum;
            Iterator<ManifestEntry> it =
                    table.newSnapshotReader()
                            .withPartitionFilter(Collections.singletonList(partition))
                            .onlyReadRealBuckets()
                            .readFileIterator();
            if (it.hasNext()) {
                bucketNum = it.next().totalBuckets();
            }
            Map<String, String> real = new HashMap<>(table.options());
            real.put(CoreOptions.BUCKET.key(), String.valueOf(bucketNum));
            real.put("write-only", "false");
            FileStoreTable realTable = table.copy(table.schema().copy(real));
            List<DataSplit> splits =
                    realTable.newSnapshotReader()
                            .withPartitionFilter(Collections.singletonList(partition))
                            .withBucket(BucketMode.POSTPONE_BUCKET)
                            .read()
                            .dataSplits();
            try (StreamTableWrite write =
                    (StreamTableWrite)
                            realTable.newStreamWriteBuilder().withCommitUser(user).newWrite()
                                    .withIOManager(IO_MANAGER)) {
                for (DataSplit split : splits) {
                    List<DataFileMeta> files = new ArrayList<>(split.dataFiles());
                    files.sort(Comparator.comparing(DataFileMeta::creationTime));
                    for (DataFileMeta meta : files) {
                        DataSplit one =
                                DataSplit.builder()
                                        .withPartition(split.partition())
                                        .withBucket(split.bucket())
                                        .withBucketPath(split.bucketPath())
                                        .withTotalBuckets(split.totalBuckets())
                                        .withDataFiles(Collections.singletonList(meta))
                                        .isStreaming(false)
                                        .build();
                        try (RecordReader<InternalRow> reader = realTable.newRead().createReader(one)) {
                            RecordReader.RecordIterator<InternalRow> batch;
                            while ((batch = reader.readBatch()) != null) {
                                InternalRow row;
                                while ((row = batch.next()) != null) {
                                    write.write(row);
                                }
                                batch.releaseBatch();
                            }
                        }
                    }
                    all.add(
                            new CommitMessageImpl(
                                    split.partition(),
                                    split.bucket(),
                                    split.totalBuckets(),
                                    DataIncrement.emptyIncrement(),
                                    new CompactIncrement(
                                            split.dataFiles(),
                                            Collections.emptyList(),
                                            Collections.emptyList())));
                }
                all.addAll(write.prepareCommit(true, identifier));
            }
        }
        Map<BinaryRow, Map<Integer, BucketFiles>> buckets = new LinkedHashMap<>();
        for (CommitMessage m : all) {
            CommitMessageImpl c = (CommitMessageImpl) m;
            buckets.computeIfAbsent(c.partition(), p -> new LinkedHashMap<>())
                    .computeIfAbsent(
                            c.bucket(),
                            b ->
                                    new BucketFiles(
                                            table.store()
                                                    .pathFactory()
                                                    .createDataFilePathFactory(c.partition(), b),
                                            table.fileIO()))
                    .update(c);
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (Map.Entry<BinaryRow, Map<Integer, BucketFiles>> p : buckets.entrySet()) {
            for (Map.Entry<Integer, BucketFiles> b : p.getValue().entrySet()) {
                messages.add(b.getValue().makeMessage(p.getKey(), b.getKey()));
            }
        }
        if (!messages.isEmpty()) {
            try (StreamTableCommit commit = streamCommit(commitTable, a)) {
                commit.commit(identifier, messages);
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("snapshot_ids", ownSnapshots(table, before, user, identifier));
        return out;
    }

    /** Expires snapshots. Args: retain_min, retain_max, time_retain_ms (each optional). */
    private JsonNode expire(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        ExpireConfig.Builder b = ExpireConfig.builder();
        CoreOptions o = table.coreOptions();
        b.snapshotRetainMin(a.path("retain_min").asInt(o.snapshotNumRetainMin()));
        b.snapshotRetainMax(a.path("retain_max").asInt(o.snapshotNumRetainMax()));
        b.snapshotTimeRetain(
                a.has("time_retain_ms")
                        ? Duration.ofMillis(a.get("time_retain_ms").asLong())
                        : o.snapshotTimeRetain());
        b.snapshotMaxDeletes(Integer.MAX_VALUE);
        int expired = table.newExpireSnapshots().config(b.build()).expire();
        ObjectNode out = JSON.createObjectNode();
        out.put("expired", expired);
        return out;
    }

    /**
     * Schema changes, in order: {"op": "add_column", "name", "type"}, {"op": "drop_column",
     * "name"}, {"op": "rename_column", "name", "new_name"}, {"op": "update_column_type", "name",
     * "type"}, {"op": "set_option", "key", "value"}, {"op": "remove_option", "key"}.
     */
    private JsonNode alter(JsonNode a) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : a.get("changes")) {
            String op = c.get("op").asText();
            switch (op) {
                case "add_column":
                    changes.add(
                            SchemaChange.addColumn(
                                    c.get("name").asText(),
                                    DataTypeJsonParser.parseAtomicTypeSQLString(
                                            c.get("type").asText())));
                    break;
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(c.get("name").asText()));
                    break;
                case "rename_column":
                    changes.add(
                            SchemaChange.renameColumn(
                                    c.get("name").asText(), c.get("new_name").asText()));
                    break;
                case "update_column_type":
                    changes.add(
                            SchemaChange.updateColumnType(
                                    c.get("name").asText(),
                                    DataTypeJsonParser.parseAtomicTypeSQLString(
                                            c.get("type").asText())));
                    break;
                case "set_option":
                    changes.add(
                            SchemaChange.setOption(
                                    c.get("key").asText(), c.get("value").asText()));
                    break;
                case "remove_option":
                    changes.add(SchemaChange.removeOption(c.get("key").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change '" + op + "'");
            }
        }
        catalog(a).alterTable(Identifier.fromString(a.get("table").asText()), changes, false);
        return JSON.getNodeFactory().nullNode();
    }

    /** Creates a tag. Args: name, snapshot_id (optional: latest). */
    private JsonNode createTag(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        if (a.has("snapshot_id")) {
            table.createTag(a.get("name").asText(), a.get("snapshot_id").asLong());
        } else {
            table.createTag(a.get("name").asText());
        }
        return JSON.getNodeFactory().nullNode();
    }

    /** Deletes a tag. Args: name. */
    private JsonNode deleteTag(JsonNode a) throws Exception {
        table(a).deleteTag(a.get("name").asText());
        return JSON.getNodeFactory().nullNode();
    }

    /** Rolls the table back. Args: tag (a tag name) or snapshot_id. */
    private JsonNode rollback(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        if (a.has("tag")) {
            table.rollbackTo(a.get("tag").asText());
        } else {
            table.rollbackTo(a.get("snapshot_id").asLong());
        }
        return JSON.getNodeFactory().nullNode();
    }

    /**
     * Creates a branch. Args: name, tag (optional: from that tag, else an empty branch with the
     * table's latest schema). The branch is then the table "db.t$branch_NAME" for every op.
     */
    private JsonNode createBranch(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        if (a.has("tag")) {
            table.createBranch(a.get("name").asText(), a.get("tag").asText());
        } else {
            table.createBranch(a.get("name").asText());
        }
        return JSON.getNodeFactory().nullNode();
    }

    /**
     * Reads rows to a Parquet file. Args: out (path; without it nothing is written); sum_fields
     * (BIGINT columns to sum, reported as sum_NAME); snapshot_id or tag (time travel, else the
     * latest snapshot); changelog_of (a snapshot id: that snapshot's changelog, as a streaming
     * read sees it, with each row's kind in an extra column "_row_kind"). read_ms excludes
     * writing the output.
     */
    private JsonNode read(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        Map<String, String> dyn = new HashMap<>();
        if (a.has("snapshot_id")) {
            dyn.put("scan.snapshot-id", a.get("snapshot_id").asText());
        }
        if (a.has("tag")) {
            dyn.put("scan.tag-name", a.get("tag").asText());
        }
        if (a.has("options")) { // any other read options, e.g. scan.version
            a.get("options").fields().forEachRemaining(e -> dyn.put(e.getKey(), e.getValue().asText()));
        }
        if (!dyn.isEmpty()) {
            table = table.copy(dyn);
        }
        RowType type = table.rowType();
        if (a.path("row_tracking").asBoolean(false)) {
            // Paimon's system columns of a row-tracking table (what the $row_tracking table shows)
            type = SpecialFields.rowTypeWithRowTracking(type);
        }
        boolean withKind = a.has("changelog_of");
        List<Split> splits;
        if (withKind) {
            SnapshotReader sr =
                    table.newSnapshotReader()
                            .withSnapshot(a.get("changelog_of").asLong())
                            .withMode(ScanMode.CHANGELOG);
            List<Split> s = new ArrayList<>();
            for (DataSplit d : sr.read().dataSplits()) {
                s.add(d);
            }
            splits = s;
        } else {
            splits = table.newReadBuilder().newScan().plan().splits();
        }
        ReadBuilder rb = table.newReadBuilder();
        if (a.path("row_tracking").asBoolean(false)) {
            rb = rb.withReadType(type);
        }
        InternalRowSerializer serializer = new InternalRowSerializer(type);
        List<InternalRow> rows = new ArrayList<>();
        long t0 = System.nanoTime();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(
                    r -> {
                        InternalRow copy = serializer.copy(r);
                        copy.setRowKind(r.getRowKind());
                        rows.add(copy);
                    });
        }
        double readMs = (System.nanoTime() - t0) / 1e6;
        ObjectNode out = JSON.createObjectNode();
        out.put("rows", rows.size());
        out.put("read_ms", readMs);
        // Checksums of BIGINT columns, so a benchmark can compare what each side read.
        for (JsonNode f : a.path("sum_fields")) {
            int pos = type.getFieldIndex(f.asText());
            long sum = 0;
            for (InternalRow r : rows) {
                sum += r.isNullAt(pos) ? 0 : r.getLong(pos);
            }
            out.put("sum_" + f.asText(), sum);
        }
        if (!a.has("out")) {
            return out;
        }
        RowType outType = type;
        if (withKind) {
            List<DataField> fields = new ArrayList<>(type.getFields());
            fields.add(new DataField(fields.size() + 1000, "_row_kind", DataTypes.STRING()));
            outType = new RowType(fields);
        }
        LocalFileIO io = LocalFileIO.create();
        Path outPath = new Path(a.get("out").asText());
        try (PositionOutputStream stream = io.newOutputStream(outPath, true)) {
            FormatWriter writer =
                    FileFormat.fromIdentifier("parquet", new Options())
                            .createWriterFactory(outType)
                            .create(stream, "zstd");
            for (InternalRow r : rows) {
                if (withKind) {
                    GenericRow kind =
                            GenericRow.of(BinaryString.fromString(r.getRowKind().shortString()));
                    RowKind k = r.getRowKind();
                    r.setRowKind(RowKind.INSERT);
                    writer.addElement(new JoinedRow(r, kind));
                    r.setRowKind(k);
                } else {
                    writer.addElement(r);
                }
            }
            writer.close();
        }
        return out;
    }

    /**
     * What Paimon reports about a table: every snapshot (id, kind, record counts, commit user and
     * identifier, schema id) and the data files of the requested snapshots ("files_of": list of
     * ids, default the latest): partition values as strings, bucket, level, file name, row
     * count.
     */
    private JsonNode metadata(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        ObjectNode out = JSON.createObjectNode();
        ArrayNode snaps = out.putArray("snapshots");
        List<Snapshot> all = new ArrayList<>(table.snapshotManager().safelyGetAllSnapshots());
        all.sort((x, y) -> Long.compare(x.id(), y.id()));
        for (Snapshot s : all) {
            ObjectNode n = snaps.addObject();
            n.put("id", s.id());
            n.put("kind", s.commitKind().name());
            n.put("total_record_count", s.totalRecordCount());
            n.put("delta_record_count", s.deltaRecordCount());
            if (s.changelogRecordCount() == null) {
                n.putNull("changelog_record_count");
            } else {
                n.put("changelog_record_count", s.changelogRecordCount());
            }
            n.put("commit_user", s.commitUser());
            n.put("commit_identifier", s.commitIdentifier());
            n.put("schema_id", s.schemaId());
        }
        List<Long> ids = new ArrayList<>();
        if (a.has("files_of")) {
            a.get("files_of").forEach(x -> ids.add(x.asLong()));
        } else if (table.snapshotManager().latestSnapshotId() != null) {
            ids.add(table.snapshotManager().latestSnapshotId());
        }
        RowType partType = table.schema().logicalPartitionType();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < partType.getFieldCount(); i++) {
            getters.add(InternalRow.createFieldGetter(partType.getTypeAt(i), i));
        }
        ObjectNode files = out.putObject("files");
        for (long id : ids) {
            ArrayNode list = files.putArray(Long.toString(id));
            Iterator<ManifestEntry> it =
                    table.newSnapshotReader().withSnapshot(id).readFileIterator();
            while (it.hasNext()) {
                ManifestEntry e = it.next();
                ObjectNode f = list.addObject();
                ArrayNode part = f.putArray("partition");
                for (InternalRow.FieldGetter g : getters) {
                    Object v = g.getFieldOrNull(e.partition());
                    if (v == null) {
                        part.addNull();
                    } else {
                        part.add(v.toString());
                    }
                }
                f.put("bucket", e.bucket());
                f.put("level", e.file().level());
                f.put("file_name", e.file().fileName());
                f.put("row_count", e.file().rowCount());
            }
        }
        ArrayNode tags = out.putArray("tags");
        table.tagManager().allTagNames().forEach(tags::add);
        out.put("schema_id", table.schema().id());
        return out;
    }

    /**
     * Byte-level vectors: for each row of a Parquet file (fields given as [[name, type]]), the
     * BinaryRow bytes Paimon serializes (hex) and the bucket Paimon's default bucket function
     * assigns for each of num_buckets (list).
     */
    private JsonNode keyVectors(JsonNode a) throws Exception {
        RowType type = rowType(a.get("fields"));
        List<InternalRow> rows = readParquet(a.get("parquet").asText(), type);
        InternalRowSerializer serializer = new InternalRowSerializer(type);
        BucketFunction fn = BucketFunction.create(CoreOptions.BucketFunctionType.DEFAULT, type);
        List<Integer> numBuckets = new ArrayList<>();
        a.path("num_buckets").forEach(n -> numBuckets.add(n.asInt()));
        ObjectNode out = JSON.createObjectNode();
        ArrayNode hex = out.putArray("bytes");
        ArrayNode hashes = out.putArray("hash");
        ArrayNode buckets = out.putArray("buckets");
        for (InternalRow r : rows) {
            BinaryRow b = serializer.toBinaryRow(r).copy();
            hex.add(toHex(b.toBytes()));
            hashes.add(b.hashCode());
            ArrayNode bs = buckets.addArray();
            for (int n : numBuckets) {
                bs.add(fn.bucket(b, n));
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ JSON rows

    /**
     * Rows given as JSON objects (field name to value) for tables of simple types (STRING,
     * BIGINT, INT, DOUBLE, BOOLEAN): the conformance target's rows. Bulk data goes through
     * Parquet instead.
     */
    static List<InternalRow> jsonRows(JsonNode rows, RowType type) {
        List<InternalRow> out = new ArrayList<>();
        for (JsonNode r : rows) {
            GenericRow row = new GenericRow(type.getFieldCount());
            for (int i = 0; i < type.getFieldCount(); i++) {
                JsonNode v = r.get(type.getFieldNames().get(i));
                row.setField(i, v == null || v.isNull() ? null : fromJson(v, type.getTypeAt(i)));
            }
            out.add(row);
        }
        return out;
    }

    private static Object fromJson(JsonNode v, DataType t) {
        switch (t.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BIGINT:
                return v.asLong();
            case INTEGER:
                return v.asInt();
            case DOUBLE:
                return v.asDouble();
            case BOOLEAN:
                return v.asBoolean();
            default:
                throw new IllegalArgumentException("JSON rows support STRING, BIGINT, INT, DOUBLE, BOOLEAN, not " + t);
        }
    }

    static JsonNode toJson(InternalRow row, RowType type) {
        ObjectNode n = JSON.createObjectNode();
        for (int i = 0; i < type.getFieldCount(); i++) {
            String name = type.getFieldNames().get(i);
            if (row.isNullAt(i)) {
                n.putNull(name);
                continue;
            }
            switch (type.getTypeAt(i).getTypeRoot()) {
                case CHAR:
                case VARCHAR:
                    n.put(name, row.getString(i).toString());
                    break;
                case BIGINT:
                    n.put(name, row.getLong(i));
                    break;
                case INTEGER:
                    n.put(name, row.getInt(i));
                    break;
                case DOUBLE:
                    n.put(name, row.getDouble(i));
                    break;
                case BOOLEAN:
                    n.put(name, row.getBoolean(i));
                    break;
                default:
                    throw new IllegalArgumentException("JSON rows support STRING, BIGINT, INT, DOUBLE, BOOLEAN, not " + type.getTypeAt(i));
            }
        }
        return n;
    }

    private List<InternalRow> inputRows(JsonNode a, RowType type) throws Exception {
        return a.has("parquet") ? readParquet(a.get("parquet").asText(), type) : jsonRows(a.get("rows"), type);
    }

    /**
     * Writes rows (JSON "rows" or a "parquet" file) into new files without committing; returns a
     * handle for commit and the data file names.
     */
    private JsonNode prepare(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        List<InternalRow> rows = inputRows(a, table.rowType());
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        List<CommitMessage> messages;
        try (StreamTableWrite write = (StreamTableWrite) builder.newWrite().withIOManager(IO_MANAGER)) {
            writeRows(table, write, rows, builder.commitUser(), 0);
            messages = write.prepareCommit(table.coreOptions().needLookup(), 0);
        }
        String handle = "h" + (++handles);
        prepared.put(handle, messages);
        ObjectNode out = JSON.createObjectNode();
        out.put("handle", handle);
        ArrayNode names = out.putArray("file_names");
        for (CommitMessage m : messages) {
            ((org.apache.paimon.table.sink.CommitMessageImpl) m)
                    .newFilesIncrement()
                    .newFiles()
                    .forEach(f -> names.add(f.fileName()));
        }
        return out;
    }

    /**
     * Commits a prepared handle under commit_user and identifier; with filter_committed, through
     * StreamTableCommit.filterAndCommit (Paimon's recovery path: skip what this user already
     * published under that identifier). Returns the snapshot ids this user's commit created.
     */
    private JsonNode commitPrepared(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        List<CommitMessage> messages = prepared.get(a.get("handle").asText());
        if (messages == null) {
            throw new IllegalArgumentException("unknown handle " + a.get("handle"));
        }
        long identifier = a.get("identifier").asLong();
        Long before = table.snapshotManager().latestSnapshotId();
        try (StreamTableCommit commit = streamCommit(table, a)) {
            if (a.path("filter_committed").asBoolean(false)) {
                Map<Long, List<CommitMessage>> m = new HashMap<>();
                m.put(identifier, messages);
                commit.filterAndCommit(m);
            } else {
                commit.commit(identifier, messages);
            }
        }
        return ownSnapshots(table, before, a.get("commit_user").asText(), identifier);
    }

    /** Snapshot ids after {@code before} committed by (user, identifier). */
    private static JsonNode ownSnapshots(FileStoreTable table, Long before, String user, long identifier)
            throws Exception {
        ArrayNode ids = JSON.createArrayNode();
        Long latest = table.snapshotManager().latestSnapshotId();
        if (latest == null) {
            return ids;
        }
        for (long id = (before == null ? 1 : before + 1); id <= latest; id++) {
            Snapshot s = table.snapshotManager().snapshot(id);
            if (s.commitUser().equals(user) && s.commitIdentifier() == identifier) {
                ids.add(id);
            }
        }
        return ids;
    }

    /**
     * Overwrites with JSON rows: the given static partition (a spec), or the whole table when
     * "partition" is null; dynamic-partition-overwrite is off, as in the pypaimon target.
     */
    private JsonNode overwrite(JsonNode a) throws Exception {
        Map<String, String> off = new HashMap<>();
        off.put("dynamic-partition-overwrite", "false");
        FileStoreTable table = table(a).copy(off);
        List<InternalRow> rows = inputRows(a, table.rowType());
        String user = a.get("commit_user").asText();
        long identifier = a.get("identifier").asLong();
        Map<String, String> partition = stringMap(a.path("partition"));
        Long before = table.snapshotManager().latestSnapshotId();
        StreamWriteBuilder builder = table.newStreamWriteBuilder().withCommitUser(user);
        try (StreamTableWrite write = (StreamTableWrite) builder.newWrite().withIOManager(IO_MANAGER);
                org.apache.paimon.table.sink.TableCommitImpl commit =
                        table.newCommit(user).ignoreEmptyCommit(false).withOverwrite(partition)) {
            writeRows(table, write, rows, user, identifier);
            commit.commit(identifier, write.prepareCommit(table.coreOptions().needLookup(), identifier));
        }
        return ownSnapshots(table, before, user, identifier);
    }

    /** Rows of the latest (or "snapshot_id") snapshot as JSON objects, merged as reads merge. */
    private JsonNode readRows(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        if (a.hasNonNull("snapshot_id")) {
            Map<String, String> dyn = new HashMap<>();
            dyn.put("scan.snapshot-id", a.get("snapshot_id").asText());
            table = table.copy(dyn);
        }
        ReadBuilder rb = table.newReadBuilder();
        ArrayNode out = JSON.createArrayNode();
        RowType type = table.rowType();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan().splits())) {
            reader.forEachRemaining(r -> out.add(toJson(r, type)));
        }
        return out;
    }

    /**
     * The table options Paimon declares: for each class named in {@code classes} (default
     * {@code org.apache.paimon.CoreOptions}), every public static {@code ConfigOption} field as
     * {@code {"class", "field", "key", "default" (its string form as Options stores it, or null),
     * "fallback_keys", "description" (the first line, HTML tags removed)}}. The generator of
     * impl's option registry (tests/paimon_java/gen_option_registry.py) and its test read it.
     */
    private JsonNode optionKeys(JsonNode a) throws Exception {
        List<String> classes = new ArrayList<>();
        if (a.has("classes")) {
            a.get("classes").forEach(c -> classes.add(c.asText()));
        } else {
            classes.add(CoreOptions.class.getName());
        }
        ArrayNode out = JSON.createArrayNode();
        org.apache.paimon.options.description.HtmlFormatter html =
                new org.apache.paimon.options.description.HtmlFormatter();
        for (String className : classes) {
            Class<?> cls = Class.forName(className);
            for (java.lang.reflect.Field f : cls.getFields()) {
                if (!java.lang.reflect.Modifier.isStatic(f.getModifiers())
                        || !org.apache.paimon.options.ConfigOption.class.isAssignableFrom(f.getType())) {
                    continue;
                }
                @SuppressWarnings("unchecked")
                org.apache.paimon.options.ConfigOption<Object> option =
                        (org.apache.paimon.options.ConfigOption<Object>) f.get(null);
                ObjectNode o = out.addObject();
                o.put("class", cls.getSimpleName());
                o.put("field", f.getName());
                o.put("key", option.key());
                if (option.hasDefaultValue() && option.defaultValue() != null) {
                    Options opts = new Options();
                    opts.set(option, option.defaultValue());
                    o.put("default", opts.toMap().get(option.key()));
                } else {
                    o.putNull("default");
                }
                ArrayNode fallbacks = o.putArray("fallback_keys");
                for (org.apache.paimon.options.FallbackKey k : option.fallbackKeys()) {
                    fallbacks.add(k.getKey());
                }
                String text = html.format(option.description()).replaceAll("<br\\s*/?>", "\n")
                        .replaceAll("<[^>]+>", "").trim();
                int nl = text.indexOf('\n');
                o.put("description", (nl < 0 ? text : text.substring(0, nl)).trim());
            }
        }
        return out;
    }

    /** The ids of the snapshots that exist now, ascending. */
    private JsonNode snapshotIds(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        List<Long> ids = new ArrayList<>();
        for (Snapshot s : table.snapshotManager().safelyGetAllSnapshots()) {
            ids.add(s.id());
        }
        ids.sort(Long::compare);
        ArrayNode out = JSON.createArrayNode();
        ids.forEach(out::add);
        return out;
    }

    /**
     * A filtered read's file counts: {@code field} = {@code value} (or {@code field} IS NULL when
     * value is null). Returns the files the scan plans (the scan prunes by embedded indexes),
     * how many of them Paimon's FileIndexPredicate keeps (embedded bytes or the data file's
     * {@code .index} extra file: what RawFileSplitRead evaluates before opening a file), and the
     * rows the filtered read returns. With {@code file-index.read.enabled} = false (dynamic
     * options) no index is evaluated: every planned file counts as kept.
     */
    private JsonNode indexFilter(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        RowType type = table.rowType();
        String field = a.get("field").asText();
        int idx = type.getFieldIndex(field);
        PredicateBuilder pb = new PredicateBuilder(type);
        JsonNode v = a.get("value");
        Predicate pred =
                v == null || v.isNull()
                        ? pb.isNull(idx)
                        : pb.equal(idx, fromJson(v, type.getTypeAt(idx)));
        ReadBuilder rb = table.newReadBuilder().withFilter(pred);
        List<Split> splits = rb.newScan().plan().splits();
        int planned = 0;
        int kept = 0;
        boolean useIndex = table.coreOptions().fileIndexReadEnabled();
        for (Split s : splits) {
            DataSplit ds = (DataSplit) s;
            for (DataFileMeta f : ds.dataFiles()) {
                planned++;
                FileIndexPredicate fp = null;
                if (!useIndex) {
                    kept++;
                    continue;
                }
                if (f.embeddedIndex() != null) {
                    fp = new FileIndexPredicate(f.embeddedIndex(), type);
                } else {
                    for (String extra : f.extraFiles()) {
                        if (extra.endsWith(".index")) {
                            Path p =
                                    new Path(
                                            table.store().pathFactory().bucketPath(ds.partition(), ds.bucket()),
                                            extra);
                            fp = new FileIndexPredicate(p, table.fileIO(), type);
                        }
                    }
                }
                if (fp == null) {
                    kept++;
                    continue;
                }
                try {
                    if (fp.evaluate(pred).remain()) {
                        kept++;
                    }
                } finally {
                    fp.close();
                }
            }
        }
        long rows = 0;
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            Iterator<InternalRow> it = reader.toCloseableIterator();
            while (it.hasNext()) {
                InternalRow r = it.next();
                Object x = r.isNullAt(idx) ? null : InternalRow.createFieldGetter(type.getTypeAt(idx), idx).getFieldOrNull(r);
                if (v == null || v.isNull() ? x == null : fromJson(v, type.getTypeAt(idx)).equals(x)) {
                    rows++;
                }
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("planned_files", planned);
        out.put("index_kept_files", kept);
        out.put("matching_rows", rows);
        return out;
    }

    private static String toHex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte x : bytes) {
            sb.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        }
        return sb.toString();
    }
}
