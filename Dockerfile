# Minimal image of the service. Not built or run on the development machines (they have
# no Docker engine); kept small so what it does can be checked by reading it.
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
# The locked versions, then the wheel: its build fetches the pinned UI assets
# (scripts/fetch_ui_assets.py) and packs them with the migrations.
RUN pip install --no-cache-dir --prefix=/install -r requirements/runtime.lock \
    && pip wheel --no-cache-dir --no-deps -w /wheels . \
    && pip install --no-cache-dir --prefix=/install --no-deps /wheels/campaign_api-*.whl

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --system --create-home --home-dir /srv/campaign campaign
WORKDIR /srv/campaign
USER campaign

EXPOSE 8000
# Several workers share their limits through REDIS_URL (serve refuses more than one
# worker without it). Migrations run once per deployment, not per container start:
#   docker compose run --rm api campaign-api db upgrade
CMD ["campaign-api", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "4"]
