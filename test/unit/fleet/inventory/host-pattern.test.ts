import { describe, expect, it } from 'vitest';
import { expandHostPattern, HostPatternError, MAX_RANGE_HOSTS } from '../../../../src/fleet/inventory/host-pattern.js';

describe('expandHostPattern: Ansible host patterns', () => {
  it('expands numeric ranges, padding to the width written', () => {
    expect(expandHostPattern('web[01:03]').hosts).toEqual(['web01', 'web02', 'web03']);
    expect(expandHostPattern('web[8:10]').hosts).toEqual(['web8', 'web9', 'web10']);
  });
  it('expands letter ranges and steps', () => {
    expect(expandHostPattern('db-[a:c]').hosts).toEqual(['db-a', 'db-b', 'db-c']);
    expect(expandHostPattern('n[1:9:4]').hosts).toEqual(['n1', 'n5', 'n9']);
    expect(expandHostPattern('n[:2]').hosts).toEqual(['n0', 'n1', 'n2']);
  });
  it('expands several ranges in one name, leftmost first', () => {
    expect(expandHostPattern('r[1:2]-n[a:b]').hosts).toEqual(['r1-na', 'r1-nb', 'r2-na', 'r2-nb']);
  });
  it('takes a trailing :NN as the port of every host', () => {
    expect(expandHostPattern('web01:2222')).toEqual({ hosts: ['web01'], port: 2222 });
    expect(expandHostPattern('w[1:2]:2200')).toEqual({ hosts: ['w1', 'w2'], port: 2200 });
    expect(expandHostPattern('[2001:db8::1]:2222')).toEqual({ hosts: ['2001:db8::1'], port: 2222 });
    expect(expandHostPattern('10.0.0.1')).toEqual({ hosts: ['10.0.0.1'], port: undefined });
  });
  it('refuses ranges Ansible refuses', () => {
    expect(() => expandHostPattern('w[01:3]')).toThrow(HostPatternError);
    expect(() => expandHostPattern('w[1:]')).toThrow(/end/);
    expect(() => expandHostPattern('w[c:a]')).toThrow(/begin <= end/);
    expect(() => expandHostPattern('w[1:2:3:4]')).toThrow(/begin:end/);
  });
  it('bounds what one pattern may expand to', () => {
    expect(() => expandHostPattern(`w[0:${MAX_RANGE_HOSTS * 10}]`)).toThrow(/more than/);
  });
});
