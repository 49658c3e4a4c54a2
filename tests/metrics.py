"""Reading the process's Prometheus metrics the way a scraper would: by sample name."""

from prometheus_client import REGISTRY


def database_errors() -> float:
    return REGISTRY.get_sample_value("campaign_api_database_errors_total") or 0.0
