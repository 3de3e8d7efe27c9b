# The worker and the webhook gateway, from the built package: no TypeScript, tsx or sources at
# run time. docker-compose.yml builds it; `node dist/worker/gateway-main.js` runs the gateway.

# Stage 1: build dist/ (JavaScript, declarations and the prebuilt workflow bundle).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own prepare script would build before the sources are copied.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json index.ts ./
COPY scripts/build.mjs ./scripts/
COPY api ./api
COPY contracts ./contracts
COPY engine ./engine
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY client ./client
COPY emulator ./emulator
RUN npm run build

# Stage 2: the runtime dependencies and dist/ only.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The result store's volume takes this folder's owner when Compose first creates it.
RUN mkdir -p /results && chown node:node /results
USER node
CMD ["node", "dist/worker/main.js"]
