import { describe, expect, it } from 'vitest';
import { EdgeadmError } from '../../../src/errors.js';
import { withScopedUserHints } from '../../../src/hub-client/hub-client.js';
import { kubeStatus } from '../../../src/hub/http/http-replies.js';
import { errorFromApi } from '../../../src/hub/contract/api-errors.js';

describe('an admin-only operation refused to a scoped user (newcomer point 12)', () => {
  it('says where a scoped user finds their clusters', () => {
    const refused = errorFromApi(
      403,
      JSON.stringify({ code: 'E_HUB_FORBIDDEN', message: 'user "alice" is not a hub admin' }),
    );
    const error = withScopedUserHints(refused);
    expect(error.code).toBe('E_HUB_FORBIDDEN');
    expect(error.hints.join('\n')).toContain('edgeadm kubectl --cluster NAME');
  });

  it('leaves other refusals as they are', () => {
    const other = new EdgeadmError('the hub refused: no', { code: 'E_HUB_FORBIDDEN' });
    expect(withScopedUserHints(other)).toBe(other);
    const status = errorFromApi(403, kubeStatus(403, 'x'));
    expect(withScopedUserHints(status)).toBe(status);
  });
});
