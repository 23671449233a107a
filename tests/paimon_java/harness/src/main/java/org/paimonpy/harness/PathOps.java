package org.paimonpy.harness;

import org.apache.paimon.bucket.BucketFunction;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.FileStorePathFactory;
import org.apache.paimon.utils.PartitionPathUtils;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/**
 * Paimon Java's partition directory names and bucket functions for given typed values.
 *
 * <p>Op {@code partition_paths}. Args: fields [[name, type string]] (the partition type), rows
 * (lists of values in Paimon's internal form: numbers; DATE / TIME as int; TIMESTAMP as [epoch
 * millis, nano of milli]; DECIMAL as a plain string; CHAR / VARCHAR as text; BINARY / VARBINARY
 * as hex; null), legacy (partition.legacy-name), default_name. Returns each row's partition path
 * as FileStorePathFactory builds it (PartitionPathUtils.generatePartitionPath of the partition
 * computer's values, without the trailing '/'), or {"error": message} where Paimon refuses.
 *
 * <p>Op {@code buckets}. Args: fields (the bucket key type), rows (as above), num_buckets,
 * function (bucket-function.type). Returns each row's bucket (BucketFunction.bucket of the
 * key's BinaryRow).
 */
final class PathOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private PathOps() {}

    private static RowType rowType(JsonNode fields) {
        List<DataField> out = new ArrayList<>();
        int i = 0;
        for (JsonNode f : fields) {
            DataType type = DataTypeJsonParser.parseAtomicTypeSQLString(f.get(1).asText());
            out.add(new DataField(i++, f.get(0).asText(), type));
        }
        return new RowType(out);
    }

    private static Object internal(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case DECIMAL:
                DecimalType d = (DecimalType) type;
                return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                String hex = v.asText();
                byte[] bytes = new byte[hex.length() / 2];
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
                }
                return bytes;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(v.get(0).asLong(), v.get(1).asInt());
            default:
                throw new IllegalArgumentException("no internal form for " + type);
        }
    }

    private static BinaryRow binaryRow(RowType type, JsonNode values) {
        GenericRow row = new GenericRow(type.getFieldCount());
        for (int i = 0; i < type.getFieldCount(); i++) {
            row.setField(i, internal(values.get(i), type.getTypeAt(i)));
        }
        return new InternalRowSerializer(type).toBinaryRow(row).copy();
    }

    static JsonNode partitionPaths(JsonNode a) {
        RowType type = rowType(a.get("fields"));
        String defaultName = a.path("default_name").asText("__DEFAULT_PARTITION__");
        boolean legacy = a.path("legacy").asBoolean(true);
        ArrayNode out = JSON.createArrayNode();
        for (JsonNode values : a.get("rows")) {
            try {
                String path =
                        PartitionPathUtils.generatePartitionPath(
                                FileStorePathFactory.getPartitionComputer(type, defaultName, legacy)
                                        .generatePartValues(binaryRow(type, values)));
                out.add(path.endsWith("/") ? path.substring(0, path.length() - 1) : path);
            } catch (RuntimeException e) {
                out.addObject().put("error", String.valueOf(e.getMessage()));
            }
        }
        return out;
    }

    static JsonNode buckets(JsonNode a) {
        RowType type = rowType(a.get("fields"));
        BucketFunction function =
                BucketFunction.create(
                        CoreOptions.BucketFunctionType.valueOf(a.get("function").asText().toUpperCase()), type);
        int numBuckets = a.get("num_buckets").asInt();
        ArrayNode out = JSON.createArrayNode();
        for (JsonNode values : a.get("rows")) {
            out.add(function.bucket(binaryRow(type, values), numBuckets));
        }
        return out;
    }
}
