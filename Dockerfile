# syntax=docker/dockerfile:1
# One image for every service; the command picks the service, e.g.
#   node services/stores/dist/main.js          (worker)
#   node services/gateway/dist/main.js migrate (migrations, then exit)
#   node services/processor-simulator/dist/main.js (card-processor simulator, the sandbox processor)

# Debian 13 (trixie): bookworm is past its regular security support. Node 24 (LTS) is the runtime,
# the release the root package.json pins as its `node` devDependency (deploy/test/node-runtime.test.ts);
# deploy/test/image-versions.test.ts refuses a floating tag.
FROM node:24.21.0-trixie-slim AS build
WORKDIR /app
# Manifests first, so the dependency layer is reused until a package.json or the lockfile changes.
COPY package.json package-lock.json ./
COPY packages/contracts/package.json packages/contracts/
COPY packages/service-kit/package.json packages/service-kit/
COPY packages/catalog-validation/package.json packages/catalog-validation/
COPY packages/client/package.json packages/client/
COPY packages/testing/package.json packages/testing/
COPY packages/console/package.json packages/console/
COPY packages/setup/package.json packages/setup/
COPY tools/demo/package.json tools/demo/
COPY services/gateway/package.json services/gateway/
COPY services/stores/package.json services/stores/
COPY services/catalog/package.json services/catalog/
COPY services/ordering/package.json services/ordering/
COPY services/payments/package.json services/payments/
COPY services/processor-simulator/package.json services/processor-simulator/
COPY tools/platform/package.json tools/platform/
COPY tools/bench/package.json tools/bench/
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages/ packages/
COPY services/ services/
COPY tools/ tools/
# The partner console's static files (vite build, about a second) before the dev tools go.
RUN npx tsc -b && npm run build -w packages/console && npm prune --omit=dev --no-audit --no-fund

FROM node:24.21.0-trixie-slim AS runtime
ENV NODE_ENV=production
# Every node command of the image (services, migrations) preloads the tracing
# instrumentation, which must patch pg, redis, http and undici before a service loads them.
ENV NODE_OPTIONS="--import @pcp/service-kit/instrument"
WORKDIR /app
RUN groupadd --system --gid 10001 pcp \
  && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
    --shell /usr/sbin/nologin pcp
# Files stay owned by root: the service user can read but not modify the application.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules/ node_modules/
COPY --from=build /app/packages/contracts/package.json packages/contracts/
COPY --from=build /app/packages/contracts/dist/ packages/contracts/dist/
COPY --from=build /app/packages/service-kit/package.json packages/service-kit/
COPY --from=build /app/packages/service-kit/dist/ packages/service-kit/dist/
COPY --from=build /app/packages/catalog-validation/package.json packages/catalog-validation/
COPY --from=build /app/packages/catalog-validation/dist/ packages/catalog-validation/dist/
COPY --from=build /app/services/gateway/package.json services/gateway/
COPY --from=build /app/services/gateway/dist/ services/gateway/dist/
# The partner guides the gateway serves at /docs/guide (read at start from /app/docs/guide).
COPY docs/guide/ docs/guide/
# The partner console the gateway serves at /console (read at start).
COPY --from=build /app/packages/console/dist/ packages/console/dist/
COPY --from=build /app/services/stores/package.json services/stores/
COPY --from=build /app/services/stores/dist/ services/stores/dist/
COPY --from=build /app/services/catalog/package.json services/catalog/
COPY --from=build /app/services/catalog/dist/ services/catalog/dist/
COPY --from=build /app/services/ordering/package.json services/ordering/
COPY --from=build /app/services/ordering/dist/ services/ordering/dist/
COPY --from=build /app/services/payments/package.json services/payments/
COPY --from=build /app/services/payments/dist/ services/payments/dist/
# The card-processor simulator: test mode's sandbox processor in every deployment, and local
# stacks' and tests' processor (live payments in production call the real one).
COPY --from=build /app/services/processor-simulator/package.json services/processor-simulator/
COPY --from=build /app/services/processor-simulator/dist/ services/processor-simulator/dist/
# Its data folder, owned by the service user: a new volume mounted there (docker-compose.yml)
# takes that owner, so the simulator can write its journal.
RUN install -d -o 10001 -g 10001 -m 0700 /var/lib/processor-simulator
USER 10001:10001
EXPOSE 8080
CMD ["node", "services/gateway/dist/main.js"]
