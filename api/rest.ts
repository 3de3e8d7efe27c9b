import type { ServiceConfig } from './config';
import { validationErrorFrom } from './errors';
import { decodeJson, type Transport } from './http';
import type { CallOptions } from './jobs';
import { pathSegment } from './path';
import {
  type RestCreateEndpointInput,
  restCreateEndpointSchema,
  restEndpointSchema,
} from './schemas/endpoint';

export function createRestOperations(config: ServiceConfig, transport: Transport) {
  const authorization = `Bearer ${config.apiKey}`;

  return {
    /** POST /endpoints; gpuTypeIds are in priority order. */
    async createEndpoint(body: RestCreateEndpointInput, options?: CallOptions) {
      const result = restCreateEndpointSchema.safeParse(body);
      if (!result.success) throw validationErrorFrom(result.error, '');
      const response = await transport.send({
        operation: 'createEndpoint',
        method: 'POST',
        url: `${config.restUrl}/endpoints`,
        headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(result.data),
        submit: true,
        signal: options?.signal,
      });
      return decodeJson(response, restEndpointSchema);
    },

    /** DELETE /networkvolumes/{id}: 204 means deleted; 400 (invalid id) and 401 arrive as ServiceErrors. */
    async deleteNetworkVolume(networkVolumeId: string, options?: CallOptions) {
      const id = pathSegment('networkVolumeId', networkVolumeId);
      await transport.send({
        operation: 'deleteNetworkVolume',
        method: 'DELETE',
        url: `${config.restUrl}/networkvolumes/${id}`,
        headers: { authorization, accept: 'application/json' },
        signal: options?.signal,
      });
    },
  };
}

export type RestOperations = ReturnType<typeof createRestOperations>;
