package org.paimonpy.harness;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Op "jdbc": Paimon's JdbcCatalog (metastore=jdbc) over {@code uri} and {@code warehouse}, with
 * {@code options} (jdbc.user, jdbc.password, catalog-key, lock.enabled, ...) added. {@code action}:
 * "list" ({database: [tables]}), "create_table" (database created if missing; {@code fields} as
 * [[name, "BIGINT"|"INT"|"STRING"|"DOUBLE"]], {@code primary_keys}, {@code table_options}),
 * "write" ({@code rows}: JSON arrays in field order, one batch commit), "read" (rows as JSON arrays,
 * in split order), "drop_table", "rename_table" ({@code to}). One catalog per call, closed after it.
 */
final class JdbcOps {

    private static final ObjectMapper JSON = new ObjectMapper();

    private JdbcOps() {}

    static JsonNode run(JsonNode a) throws Exception {
        Map<String, String> conf = new HashMap<>();
        conf.put("metastore", "jdbc");
        conf.put("uri", a.get("uri").asText());
        conf.put("warehouse", a.get("warehouse").asText());
        a.path("options").fields().forEachRemaining(e -> conf.put(e.getKey(), e.getValue().asText()));
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(Options.fromMap(conf)))) {
            String action = a.get("action").asText();
            switch (action) {
                case "list":
                    ObjectNode out = JSON.createObjectNode();
                    for (String db : catalog.listDatabases()) {
                        ArrayNode tables = out.putArray(db);
                        catalog.listTables(db).forEach(tables::add);
                    }
                    return out;
                case "create_table":
                    return createTable(catalog, a);
                case "write":
                    return write(catalog.getTable(Identifier.fromString(a.get("table").asText())), a.get("rows"));
                case "read":
                    return read(catalog.getTable(Identifier.fromString(a.get("table").asText())));
                case "drop_table":
                    catalog.dropTable(Identifier.fromString(a.get("table").asText()), false);
                    return JSON.getNodeFactory().nullNode();
                case "rename_table":
                    catalog.renameTable(Identifier.fromString(a.get("table").asText()),
                            Identifier.fromString(a.get("to").asText()), false);
                    return JSON.getNodeFactory().nullNode();
                default:
                    throw new IllegalArgumentException("unknown jdbc action '" + action + "'");
            }
        }
    }

    private static DataType type(String name) {
        switch (name) {
            case "BIGINT":
                return DataTypes.BIGINT();
            case "INT":
                return DataTypes.INT();
            case "STRING":
                return DataTypes.STRING();
            case "DOUBLE":
                return DataTypes.DOUBLE();
            default:
                throw new IllegalArgumentException("JdbcOps takes BIGINT, INT, STRING, DOUBLE, not " + name);
        }
    }

    private static JsonNode createTable(Catalog catalog, JsonNode a) throws Exception {
        Identifier id = Identifier.fromString(a.get("table").asText());
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode f : a.get("fields")) {
            schema.column(f.get(0).asText(), type(f.get(1).asText()));
        }
        List<String> keys = new ArrayList<>();
        a.path("primary_keys").forEach(k -> keys.add(k.asText()));
        if (!keys.isEmpty()) {
            schema.primaryKey(keys);
        }
        a.path("table_options").fields().forEachRemaining(e -> schema.option(e.getKey(), e.getValue().asText()));
        catalog.createTable(id, schema.build(), false);
        return JSON.getNodeFactory().nullNode();
    }

    private static JsonNode write(Table table, JsonNode rows) throws Exception {
        RowType type = table.rowType();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
            for (JsonNode r : rows) {
                GenericRow row = new GenericRow(type.getFieldCount());
                for (int i = 0; i < type.getFieldCount(); i++) {
                    JsonNode v = r.get(i);
                    if (v == null || v.isNull()) {
                        continue;
                    }
                    switch (type.getTypeAt(i).getTypeRoot()) {
                        case BIGINT:
                            row.setField(i, v.asLong());
                            break;
                        case INTEGER:
                            row.setField(i, v.asInt());
                            break;
                        case DOUBLE:
                            row.setField(i, v.asDouble());
                            break;
                        default:
                            row.setField(i, BinaryString.fromString(v.asText()));
                    }
                }
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
        return JSON.getNodeFactory().numberNode(rows.size());
    }

    private static JsonNode read(Table table) throws Exception {
        RowType type = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        ArrayNode out = JSON.createArrayNode();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan())) {
            Iterator<InternalRow> it = reader.toCloseableIterator();
            while (it.hasNext()) {
                InternalRow row = it.next();
                ArrayNode r = out.addArray();
                for (int i = 0; i < type.getFieldCount(); i++) {
                    if (row.isNullAt(i)) {
                        r.addNull();
                        continue;
                    }
                    List<DataField> fields = type.getFields();
                    switch (fields.get(i).type().getTypeRoot()) {
                        case BIGINT:
                            r.add(row.getLong(i));
                            break;
                        case INTEGER:
                            r.add(row.getInt(i));
                            break;
                        case DOUBLE:
                            r.add(row.getDouble(i));
                            break;
                        default:
                            r.add(row.getString(i).toString());
                    }
                }
            }
        }
        return out;
    }
}
