# The worker and the webhook gateway. Workflows are bundled at start-up by the Temporal SDK.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY api ./api
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY client ./client
COPY tsconfig.json ./
USER node
CMD ["npx", "tsx", "worker/main.ts"]
