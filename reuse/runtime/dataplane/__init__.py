"""The data plane: the bus, its frames, backpressure, retention and the Spark data sources."""
