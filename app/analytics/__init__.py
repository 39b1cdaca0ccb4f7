"""Audit analytics on Spark: turns the audit trail into Parquet figure tables and one self-contained report.

``event_files`` writes the exported Parquet layout (pyarrow) and ``export`` fills it from the database.
For the report: ``session`` starts Spark, ``sources`` reads the events (``events_schema``), ``transforms``
holds the pure DataFrame -> DataFrame steps, ``job`` runs them and writes the tables (``side_by_side``),
``report_data`` collects the figures' small aggregates, ``charts`` draws them and ``report`` renders the
page from ``templates/``; ``progress`` prints phase lines and ``spark_internals`` fences pyspark's private
API. Needs the ``analytics`` extra.
"""
