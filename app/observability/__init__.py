"""What operators watch: Prometheus metrics of one app."""
