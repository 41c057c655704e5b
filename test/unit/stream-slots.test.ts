import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamSlots } from '../../api/stream-slots';

test('StreamSlots: at most N per token, per token, and a slot comes back once', () => {
  const slots = new StreamSlots(2);
  const a = StreamSlots.keyOf('Bearer token-a-0123456789');
  const b = StreamSlots.keyOf('Bearer token-b-0123456789');
  assert.notEqual(a, b);
  assert.doesNotMatch(a, /token/, 'only a digest is kept');
  const first = slots.take(a);
  const second = slots.take(a);
  assert.ok(first && second, 'two streams for one token');
  assert.equal(slots.take(a), undefined, 'a third for the same token is refused');
  assert.ok(slots.take(b), 'another token has its own slots');
  first();
  first();
  assert.equal(slots.count(a), 1, 'releasing twice gives back one slot');
  assert.ok(slots.take(a), 'the freed slot can be taken');
  assert.equal(slots.take(a), undefined);
});
