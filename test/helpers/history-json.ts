import { dirname } from 'node:path';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

/**
 * A history to and from the JSON the Temporal CLI and the SDK's `historyToJSON` / `historyFromJSON`
 * (@temporalio/common/lib/proto-utils) use. Why not those two: in this dependency tree each
 * @temporalio package gets its own copy of protobufjs 8 (the root holds protobufjs 7 for
 * @grpc/proto-loader), and the SDK's functions hand @temporalio/proto's types to @temporalio/common's
 * copy of protojson, which refuses them ("type must be a Type"). Here protojson is loaded from the
 * copy @temporalio/proto itself uses; the conversion is the SDK's.
 */
type ProtoJson = {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const protojson = require(require.resolve('protobufjs/ext/protojson', { paths: [dirname(require.resolve('@temporalio/proto'))] })) as ProtoJson;
const historyType = (patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }).lookupType('temporal.api.history.v1.History');

export type History = proto.temporal.api.history.v1.IHistory;

/** The history as proto JSON (event types as `EVENT_TYPE_…`, 64-bit numbers as strings, payload data in base64). */
export function historyToJson(history: History): unknown {
  return protojson.toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history));
}

/** A history read back from `historyToJson`'s JSON; the replayer takes it as is. */
export function historyFromJson(json: unknown): History {
  if (typeof json !== 'object' || json === null || !Array.isArray((json as { events?: unknown }).events))
    throw new TypeError('a history must be an object with an array of events');
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History | null;
  if (!history) throw new TypeError('not a history');
  return history;
}
