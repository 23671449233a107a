"""The data model: Paimon's data types (``types``), the ``BinaryRow`` encoding (``binary_row``),
how Java spells values as text (``java_text``) and as partition directory names
(``partition_names``)."""
