"""Byte-level codecs of Paimon's on-disk format: Avro containers (``avro``, ``avro_encode``, the
column-wise decoder ``avro_columns``), the data file formats (``file_format`` and the Parquet, ORC
and Avro readers and writers), the JSON field access of metadata files (``json_fields``) and the
manifest blocks' partition index. The records these codecs carry live with the package that owns
them: ``impl.snapshot.records``, ``impl.schema.records``, ``impl.manifest.records``,
``impl.datafile.meta``; the data model (types, BinaryRow) in ``impl.data``."""
