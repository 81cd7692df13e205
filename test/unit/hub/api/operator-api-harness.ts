/**
 * Calls the hub's operator API as its request handler is called, without a
 * socket: a readable request, a response that records the status and the
 * JSON answered, and an {@link HttpError} turned into its answer as the hub
 * turns it. Anything else thrown is a crash (the hub would answer 500).
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { HttpError } from '../../../../src/hub/http/http-replies.js';
import { serveApi } from '../../../../src/hub/api/operator-api.js';

/** What the hub answered. */
export interface ApiAnswer {
  status: number;
  json: Record<string, unknown>;
  crash?: unknown;
}

/** One request to the operator API of `context`; `body` as JSON, or as text when a string. */
export async function callApi(
  context: HubContext,
  method: string,
  url: string,
  options: { token?: string; body?: unknown } = {},
): Promise<ApiAnswer> {
  const text =
    options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  const req = Object.assign(Readable.from(text === undefined ? [] : [Buffer.from(text, 'utf8')]), {
    method,
    url,
    headers: {
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...(text === undefined ? {} : { 'content-length': String(Buffer.byteLength(text)) }),
    },
    socket: {},
  }) as unknown as IncomingMessage;
  const answer: ApiAnswer = { status: 0, json: {} };
  const res = Object.assign(new EventEmitter(), {
    headersSent: false,
    writeHead(status: number) {
      answer.status = status;
      return res;
    },
    end(body?: string) {
      answer.json = body ? (JSON.parse(body) as Record<string, unknown>) : {};
    },
  }) as unknown as ServerResponse;
  try {
    if (!(await serveApi(context, req, res))) answer.status = 404;
  } catch (error) {
    if (error instanceof HttpError) {
      answer.status = error.status;
      answer.json = { code: error.code, message: error.message };
    } else {
      answer.status = 500;
      answer.crash = error;
    }
  }
  return answer;
}
