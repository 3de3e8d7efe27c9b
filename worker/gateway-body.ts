/**
 * The gateway's one reader of request bodies, as bytes, within the route's `bodyLimit`.
 *
 * A body over the limit is answered 413, and the sender must be able to read that answer. Were the
 * gateway to answer and close while the sender is still writing, the unread bytes left on the
 * socket make the kernel reset the connection, and a reset can overtake the 413: the sender sees
 * a network error, logs it instead of the reason, and retries a delivery it should drop. So the
 * rest of an oversized body is read and dropped (nothing is kept) up to a bound, and only then is
 * the 413 sent and the connection closed. A body announced or sent beyond the bound is answered at
 * once and the connection closed: reading it all would cost more than the sender's answer is worth.
 */
import { errorCodes, type FastifyRequest } from 'fastify';

/** Bytes past the limit read and dropped before the 413 (GitHub, for one, sends up to 25 MB). */
export const DEFAULT_OVERSIZED_BODY_DISCARD_BYTES = 32 * 1024 * 1024;

type Done = (error: Error | null, body?: Buffer) => void;

/**
 * A Fastify content-type parser (`addContentTypeParser('*', reader)`): the body as a Buffer, or
 * FST_ERR_CTP_BODY_TOO_LARGE (413) once the body has ended or passed `limit + discardBytes`.
 */
export function boundedBodyReader(discardBytes: number = DEFAULT_OVERSIZED_BODY_DISCARD_BYTES) {
  return (request: FastifyRequest, payload: NodeJS.ReadableStream, done: Done): void => {
    // The route's own limit where it sets one (the events route does), else the server's.
    const limit = request.routeOptions.bodyLimit;
    const bound = limit + discardBytes;
    if (Number(request.headers['content-length']) > bound) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onError);
    };
    function onData(chunk: Buffer | string) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > bound) {
        stop();
        done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      } else if (received > limit) chunks.length = 0;
      else chunks.push(bytes);
    }
    function onEnd() {
      stop();
      if (received > limit) done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      else done(null, Buffer.concat(chunks, received));
    }
    function onError(error: Error & { statusCode?: number }) {
      stop();
      // The sender went away mid-body: no one reads the answer, but it must not be a 500.
      if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
      done(error);
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
    payload.resume();
  };
}
