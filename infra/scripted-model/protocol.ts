import type { ServerResponse } from 'node:http';
import type { Answer, RequestView } from './conversation';

/** One provider API: how to read its requests and how to say an answer or an error in its wire format. */
export interface Protocol {
  /** Reads the request body; throws `RequestError` when it is not a request of this API. */
  read(body: Record<string, unknown>): RequestView;
  /** Sends the answer, streamed when the request asked for a stream. `responseId` is unique per server. */
  reply(response: ServerResponse, answer: Answer, view: RequestView, responseId: string): void;
  /** Sends an error in the shape this API's clients parse. */
  error(response: ServerResponse, status: number, message: string): void;
}
