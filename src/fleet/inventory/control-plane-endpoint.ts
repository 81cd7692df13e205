/**
 * The control planes' shared address as an inventory writes it
 * (`controlPlane.endpoint`, `control_plane_endpoint`): what `edgeadm init
 * --control-plane-endpoint` takes, a host name or address with an optional
 * port, and no scheme.
 */
import { inventoryError, type InventorySource } from './inventory-error.js';

const HOST_NAME = String.raw`[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?`;
const BRACKETED_IPV6 = String.raw`\[[0-9A-Fa-f:.]+\]`;
const ENDPOINT = new RegExp(String.raw`^(?:${HOST_NAME}|${BRACKETED_IPV6})(?::(\d{1,5}))?$`);

/** A valid endpoint, or an `E_INVENTORY` error naming the field's line. */
export function controlPlaneEndpointField(value: unknown, path: string[], source: InventorySource): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw inventoryError(
      source,
      path,
      'expected host or host:port (a load balancer or DNS name before the control planes)',
    );
  }
  const text = value.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    throw inventoryError(source, path, `expected host or host:port without a scheme, not ${text}`);
  }
  const match = ENDPOINT.exec(text);
  if (match === null) {
    const hint = text.split(':').length > 2 ? ' (an IPv6 address goes in brackets: [fd00::10]:6443)' : '';
    throw inventoryError(source, path, `expected host or host:port, not ${text}${hint}`);
  }
  const port = match[1] === undefined ? undefined : Number(match[1]);
  if (port !== undefined && (port < 1 || port > 65535)) {
    throw inventoryError(source, path, `port ${port} is not between 1 and 65535`);
  }
  return text;
}
