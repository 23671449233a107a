package org.paimonpy.harness;

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowType;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;

/**
 * Paimon Java's REST catalog (RESTCatalog, RESTSnapshotCommit) against a REST catalog server:
 * op {@code rest}. Args: uri, warehouse (the catalog name), token (bearer), table ("db.t");
 * optional create {fields: [[name, type string]], primary_keys, options}; optional rows (JSON
 * objects, as Harness.jsonRows reads them) written and committed in one batch commit;
 * read (bool). Returns {rows (when read), snapshot_ids, schema_id}.
 */
final class RestOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private RestOps() {}

    static JsonNode run(JsonNode a) throws Exception {
        Options options = new Options();
        options.set("metastore", "rest");
        options.set("uri", a.get("uri").asText());
        options.set("warehouse", a.get("warehouse").asText());
        options.set("token.provider", "bear");
        options.set("token", a.get("token").asText());
        options.set("cache-enabled", "false");
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            Identifier id = Identifier.fromString(a.get("table").asText());
            if (a.hasNonNull("create")) {
                JsonNode c = a.get("create");
                catalog.createDatabase(id.getDatabaseName(), true);
                Schema.Builder b = Schema.newBuilder();
                for (JsonNode f : c.get("fields")) {
                    b.column(f.get(0).asText(), DataTypeJsonParser.parseAtomicTypeSQLString(f.get(1).asText()));
                }
                List<String> pks = new ArrayList<>();
                c.path("primary_keys").forEach(k -> pks.add(k.asText()));
                b.primaryKey(pks);
                c.path("options").fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
                catalog.createTable(id, b.build(), false);
            }
            FileStoreTable table = (FileStoreTable) catalog.getTable(id);
            RowType type = table.rowType();
            if (a.hasNonNull("rows")) {
                BatchWriteBuilder builder = table.newBatchWriteBuilder();
                try (BatchTableWrite write = builder.newWrite();
                        BatchTableCommit commit = builder.newCommit()) {
                    for (InternalRow r : Harness.jsonRows(a.get("rows"), type)) {
                        write.write(r);
                    }
                    commit.commit(write.prepareCommit());
                }
            }
            ObjectNode out = JSON.createObjectNode();
            if (a.path("read").asBoolean(false)) {
                ArrayNode rows = out.putArray("rows");
                ReadBuilder rb = table.newReadBuilder();
                try (RecordReader<InternalRow> reader =
                        rb.newRead().createReader(rb.newScan().plan().splits())) {
                    reader.forEachRemaining(r -> rows.add(Harness.toJson(r, type)));
                }
            }
            ArrayNode ids = out.putArray("snapshot_ids");
            for (Snapshot s : table.snapshotManager().safelyGetAllSnapshots()) {
                ids.add(s.id());
            }
            out.put("schema_id", table.schema().id());
            return out;
        }
    }
}
