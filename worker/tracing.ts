/**
 * OpenTelemetry traces through Temporal's interceptors package, off unless asked for: OTEL_TRACES
 * (`console` prints finished spans; see config.ts) or a span processor handed to runWorker by an
 * embedding program (which brings its own exporter, OTLP or other). One trace runs from the
 * client's start of a workflow (its interceptor puts the context in the workflow's headers) through
 * the workflow and its activities to the HTTP calls to the service (api/http.ts opens a span per
 * attempt under whatever span is active).
 *
 * Workflow spans are made inside the sandbox and leave it through a sink; the sandbox gets the
 * interceptors only when the workflow code is bundled with them, so a worker with tracing on
 * bundles at start rather than load the prebuilt bundle (see run-worker.ts).
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';

export const TRACER_NAME = 'durable-serverless';

export interface TracingOptions {
  /** Where finished spans go: a BatchSpanProcessor over the exporter of your choice. */
  spanProcessor: SpanProcessor;
  /** `service.name` of the spans; default durable-serverless-worker. */
  serviceName?: string;
}

export interface Tracing {
  /** Spread into Worker.create: the activity interceptors, the workflow interceptor module, the sink. */
  workerOptions: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  /** Flushes and stops the provider; spans still open are lost. */
  shutdown(): Promise<void>;
}

/** The span processor for OTEL_TRACES=console. */
export function consoleSpanProcessor(): SpanProcessor {
  return new SimpleSpanProcessor(new ConsoleSpanExporter());
}

let contextManagerInstalled = false;

/**
 * Registers a tracer provider globally (OpenTelemetry's API is global by design: the HTTP spans
 * in api/ find it there) and returns the worker's interceptors and sink.
 */
export function startTracing(options: TracingOptions): Tracing {
  const resource = new Resource({ 'service.name': options.serviceName ?? 'durable-serverless-worker' });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [options.spanProcessor] });
  if (!contextManagerInstalled) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(
      new CompositePropagator({ propagators: [new W3CTraceContextPropagator()] }),
    );
    contextManagerInstalled = true;
  }
  trace.setGlobalTracerProvider(provider);
  return {
    workerOptions: {
      interceptors: {
        activity: [
          (ctx) => ({
            inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
        workflowModules: [
          require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
        ],
      },
      sinks: { exporter: makeWorkflowExporter(options.spanProcessor, resource) },
    },
    async shutdown() {
      await provider.forceFlush();
      await provider.shutdown();
      trace.disable();
    },
  };
}

/** For the Temporal client that starts workflows: carries the caller's trace into the workflow. */
export function tracingClientInterceptors() {
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}
