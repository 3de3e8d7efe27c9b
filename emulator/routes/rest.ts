import type { FastifyInstance } from 'fastify';
import { createEndpoint, deleteVolume, EndpointError, firstAvailableGpu } from '../endpoints';
import type { Engine } from '../engine';
import { LIMITS } from '../limits';
import { endpointFieldsSchema, restCreateEndpointSchema, volumeParamsSchema } from '../schemas';
import { HttpError, parseWith, requireAccount, routeOptions } from './common';

// The REST interface under /v1: endpoint creation and network volume deletion.

const restRoute = (operation: 'rest-create-endpoint' | 'rest-delete-volume', label: string) =>
  routeOptions({ operation, iface: 'rest', label, bodyLimit: LIMITS.otherMaxBytes });

export function registerRestRoutes(app: FastifyInstance, engine: Engine): void {
  app.post('/v1/endpoints', restRoute('rest-create-endpoint', 'POST /v1/endpoints'), async (request) => {
    const account = requireAccount(request);
    const body = parseWith(restCreateEndpointSchema, request.body, 'endpoint');
    const gpu = firstAvailableGpu(engine, body.gpuTypeIds);
    if (gpu === undefined) {
      throw new HttpError(400, `none of the requested GPU types is available: ${body.gpuTypeIds.join(', ')}`);
    }
    const fields = parseWith(
      endpointFieldsSchema,
      {
        name: body.name,
        templateId: body.templateId,
        gpuIds: gpu,
        workersMin: body.workersMin,
        workersMax: body.workersMax,
        idleTimeout: body.idleTimeout,
        networkVolumeId: body.networkVolumeId,
        flashBootType: body.flashBootType,
      },
      'endpoint',
    );
    try {
      const { id: _ignored, ...values } = fields;
      const endpoint = createEndpoint(engine, account, values);
      const f = endpoint.fields;
      return {
        id: f.id,
        name: f.name,
        templateId: f.templateId,
        gpuTypeIds: body.gpuTypeIds,
        gpuIds: f.gpuIds,
        type: f.type,
        workersMin: f.workersMin,
        workersMax: f.workersMax,
        idleTimeout: f.idleTimeout,
        flashBootType: f.flashBootType,
        networkVolumeId: f.networkVolumeId,
      };
    } catch (error) {
      if (error instanceof EndpointError) throw new HttpError(400, error.message);
      throw error;
    }
  });

  app.delete(
    '/v1/networkvolumes/:networkVolumeId',
    restRoute('rest-delete-volume', 'DELETE /v1/networkvolumes'),
    async (request, reply) => {
      const account = requireAccount(request);
      const parsed = volumeParamsSchema.safeParse(request.params);
      if (!parsed.success) throw new HttpError(400, 'invalid network volume id');
      try {
        deleteVolume(engine, account, parsed.data.networkVolumeId);
      } catch (error) {
        if (error instanceof EndpointError) throw new HttpError(400, error.message);
        throw error;
      }
      return reply.code(204).send();
    },
  );

  app.delete(
    '/v1/networkvolumes',
    restRoute('rest-delete-volume', 'DELETE /v1/networkvolumes'),
    async (request) => {
      requireAccount(request);
      throw new HttpError(400, 'invalid network volume id: none given');
    },
  );
}
