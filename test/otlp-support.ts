/**
 * An OTLP/HTTP collector on loopback for the tests: takes trace exports as protobuf
 * (`application/x-protobuf`, OpenTelemetry's default) or JSON (`application/json`) and keeps each
 * span with the content type it came in.
 */
import { createServer, type Server } from "node:http";

/** One exported span, with the `service.name` of its resource. */
export interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, string>;
  /** The export request's `content-type`. */
  contentType: string;
}

type Span = Omit<ExportedSpan, "contentType">;

/** Starts a collector that pushes every span it is sent to `into`. */
export function startOtlpCollector(into: ExportedSpan[]): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const contentType = req.headers["content-type"] ?? "";
      const body = Buffer.concat(chunks);
      const spans = contentType === "application/x-protobuf" ? protobufSpans(body) : jsonSpans(body);
      for (const s of spans) into.push({ ...s, contentType });
      res.writeHead(200, { "content-type": contentType }).end(contentType.endsWith("json") ? "{}" : "");
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const nanosToMs = (nanos: bigint) => Number(nanos / 1000n) / 1000;

interface JsonKeyValue {
  key: string;
  value: { stringValue?: string };
}

interface OtlpJson {
  resourceSpans?: Array<{
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        startTimeUnixNano: string;
        endTimeUnixNano: string;
        attributes?: JsonKeyValue[];
      }>;
    }>;
  }>;
}

function jsonSpans(body: Buffer): Span[] {
  const request = JSON.parse(body.toString("utf8")) as OtlpJson;
  const attrs = (kvs: JsonKeyValue[] | undefined) =>
    Object.fromEntries((kvs ?? []).map((a) => [a.key, a.value.stringValue ?? ""]));
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const service = attrs(rs.resource?.attributes)["service.name"] ?? "";
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        startMs: nanosToMs(BigInt(s.startTimeUnixNano)),
        endMs: nanosToMs(BigInt(s.endTimeUnixNano)),
        attributes: attrs(s.attributes),
      })),
    );
  });
}

/**
 * The spans of an `ExportTraceServiceRequest` in protobuf (opentelemetry-proto's trace.proto and
 * common.proto), read with the wire format's four rules; only the fields the tests look at.
 */
function protobufSpans(body: Buffer): Span[] {
  const text = (b: Buffer | undefined) => b?.toString("utf8") ?? "";
  const attrs = (kvs: Buffer[]) =>
    Object.fromEntries(
      kvs.map((kv) => {
        const f = fields(kv);
        return [text(bytes(f, 1)[0]), text(bytes(fields(bytes(f, 2)[0] ?? Buffer.alloc(0)), 1)[0])];
      }),
    );
  return bytes(fields(body), 1).flatMap((resourceSpans) => {
    const rs = fields(resourceSpans);
    const resource = bytes(rs, 1)[0];
    const service = attrs(resource ? bytes(fields(resource), 1) : [])["service.name"] ?? "";
    return bytes(rs, 2).flatMap((scopeSpans) =>
      bytes(fields(scopeSpans), 2).map((span) => {
        const s = fields(span);
        return {
          service,
          traceId: bytes(s, 1)[0]?.toString("hex") ?? "",
          spanId: bytes(s, 2)[0]?.toString("hex") ?? "",
          parentSpanId: bytes(s, 4)[0]?.toString("hex") ?? "",
          name: text(bytes(s, 5)[0]),
          startMs: nanosToMs(numbers(s, 7)[0] ?? 0n),
          endMs: nanosToMs(numbers(s, 8)[0] ?? 0n),
          attributes: attrs(bytes(s, 9)),
        };
      }),
    );
  });
}

type Fields = Map<number, Array<bigint | Buffer>>;

const bytes = (f: Fields, field: number): Buffer[] =>
  (f.get(field) ?? []).filter((v): v is Buffer => v instanceof Buffer);
const numbers = (f: Fields, field: number): bigint[] =>
  (f.get(field) ?? []).filter((v): v is bigint => typeof v === "bigint");

/** A protobuf message's fields by number: varints and fixed ints as bigint, the rest as bytes. */
function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error("protobuf: truncated varint");
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    let value: bigint | Buffer;
    switch (key & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = buf.readBigUInt64LE(at);
        at += 8;
        break;
      case 2: {
        const length = Number(varint());
        value = buf.subarray(at, at + length);
        at += length;
        break;
      }
      case 5:
        value = BigInt(buf.readUInt32LE(at));
        at += 4;
        break;
      default:
        throw new Error(`protobuf: wire type ${key & 7} not expected`);
    }
    const list = out.get(key >> 3) ?? [];
    list.push(value);
    out.set(key >> 3, list);
  }
  return out;
}
