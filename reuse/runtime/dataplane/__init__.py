"""The data plane: the bus, its frames, backpressure, retention, the Spark data sources, and the
MQTT path (broker, publisher, ingest into the bus)."""
