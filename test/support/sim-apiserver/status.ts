/**
 * Kubernetes `Status` objects for the simulated API server: the failure
 * bodies (NotFound, AlreadyExists, Conflict, Forbidden, …) that clients such
 * as kubectl and client libraries parse to decide what went wrong. The
 * messages follow the wording of the real API server so that code under test
 * sees the same text it would meet in a cluster.
 */

/** One cause inside a Status's `details.causes`. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** The `details` block of a Status. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A `meta/v1` Status object as the API server sends it. */
export interface StatusObject {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** An error that the request pipeline turns into a Status response. */
export class ApiError extends Error {
  readonly status: StatusObject;

  constructor(status: StatusObject) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
    this.name = 'ApiError';
    this.status = status;
  }
}

/** Identifies the object a Status talks about: its resource (plural) and group. */
export interface StatusTarget {
  resource: string;
  group: string;
  name?: string;
}

function failure(code: number, reason: string, message: string, details?: StatusDetails): ApiError {
  const status: StatusObject = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  };
  if (details) status.details = details;
  return new ApiError(status);
}

/** `resource.group` as the API server prints a qualified resource ("secrets", "roles.rbac.authorization.k8s.io"). */
export function qualifiedResource(target: StatusTarget): string {
  return target.group ? `${target.resource}.${target.group}` : target.resource;
}

function detailsOf(target: StatusTarget): StatusDetails {
  const details: StatusDetails = { kind: target.resource };
  if (target.name !== undefined) details.name = target.name;
  if (target.group) details.group = target.group;
  return details;
}

/** 404 `<resource> "<name>" not found`. */
export function notFound(target: StatusTarget): ApiError {
  return failure(404, 'NotFound', `${qualifiedResource(target)} "${target.name ?? ''}" not found`, detailsOf(target));
}

/** 409 `<resource> "<name>" already exists`. */
export function alreadyExists(target: StatusTarget): ApiError {
  return failure(
    409,
    'AlreadyExists',
    `${qualifiedResource(target)} "${target.name ?? ''}" already exists`,
    detailsOf(target),
  );
}

/** 409 Conflict for a stale resourceVersion (optimistic concurrency). */
export function conflict(target: StatusTarget, why: string): ApiError {
  return failure(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(target)} "${target.name ?? ''}": ${why}`,
    detailsOf(target),
  );
}

/** 409 Conflict from server-side apply, listing each contested field. */
export function applyConflict(target: StatusTarget, conflicts: { manager: string; field: string }[]): ApiError {
  const causes = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with "${c.manager}"`,
    field: c.field,
  }));
  const lines = conflicts.map((c) => `- conflict with "${c.manager}": ${c.field}`).join('\n');
  const noun = conflicts.length === 1 ? 'conflict' : 'conflicts';
  return failure(409, 'Conflict', `Apply failed with ${conflicts.length} ${noun}:\n${lines}`, {
    ...detailsOf(target),
    causes,
  });
}

/** 403 Forbidden, worded as the RBAC authorizer words it. */
export function forbidden(target: StatusTarget | undefined, message: string): ApiError {
  return failure(403, 'Forbidden', message, target ? detailsOf(target) : {});
}

/** 401 Unauthorized (bad or expired credentials). */
export function unauthorized(): ApiError {
  return failure(401, 'Unauthorized', 'Unauthorized');
}

/** 400 BadRequest. */
export function badRequest(message: string): ApiError {
  return failure(400, 'BadRequest', message);
}

/** 422 Invalid with one field cause. */
export function invalid(kind: string, name: string, field: string, message: string): ApiError {
  return failure(422, 'Invalid', `${kind} "${name}" is invalid: ${field}: ${message}`, {
    name,
    kind,
    causes: [{ reason: 'FieldValueInvalid', message, field }],
  });
}

/** 410 Expired: a watch or list asked for a resourceVersion older than the kept history. */
export function expired(message: string): ApiError {
  return failure(410, 'Expired', message);
}

/** 405 MethodNotAllowed for a verb the resource does not support. */
export function methodNotSupported(target: StatusTarget, verb: string): ApiError {
  return failure(
    405,
    'MethodNotAllowed',
    `${verb} is not supported on resources of kind "${qualifiedResource(target)}"`,
    detailsOf(target),
  );
}

/** 415 for a PATCH content type the server does not speak. */
export function unsupportedMediaType(contentType: string): ApiError {
  return failure(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got ${contentType})`,
  );
}

/** 415 for a request body the simulation cannot decode (it speaks JSON, not protobuf or CBOR). */
export function unsupportedBodyEncoding(contentType: string): ApiError {
  return failure(
    415,
    'UnsupportedMediaType',
    `the simulated API server decodes JSON request bodies only, not ${contentType} - accepted media types include: application/json, application/yaml`,
  );
}

/** 404 for a path that names no known resource or endpoint. */
export function pathNotFound(): ApiError {
  return failure(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** 503 while the simulation is deliberately unavailable. */
export function serviceUnavailable(message: string): ApiError {
  return failure(503, 'ServiceUnavailable', message);
}

/** 500 for a bug or an unexpected state inside the simulation. */
export function internalError(message: string): ApiError {
  return failure(500, 'InternalError', `Internal error occurred: ${message}`);
}

/** A `Success` Status, as returned by some deletes. */
export function success(details: StatusDetails): StatusObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details, code: 200 };
}
