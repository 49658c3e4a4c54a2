# Minimal image of the service. Not built or run on the development machines (they have
# no Docker engine); kept small so what it does can be checked by reading it.
FROM python:3.11-slim

WORKDIR /app
# Editable install: migrations (alembic/) and the UI assets live beside the packages.
COPY pyproject.toml README.md alembic.ini ./
COPY alembic ./alembic
COPY engine ./engine
COPY graphql_schema ./graphql_schema
COPY rest ./rest
COPY scripts ./scripts
RUN pip install --no-cache-dir -e . \
    && python scripts/fetch_ui_assets.py \
    && useradd --system --home /app campaign
USER campaign

EXPOSE 8000
# Several workers share their limits through REDIS_URL (serve refuses more than one
# worker without it). Migrations run once per deployment, not per container start:
#   docker compose run --rm api campaign-api db upgrade
CMD ["campaign-api", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "4"]
