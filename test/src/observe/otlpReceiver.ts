/**
 * A local OTLP/HTTP receiver for tests (JSON protocol): a real HTTP server on 127.0.0.1 that
 * accepts POSTs to /v1/traces and /v1/metrics, answers 200 as a collector does, and keeps the
 * decoded bodies. Closed with its Scope.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly status?: { readonly code?: number }
}

export interface Received {
  readonly path: string
  readonly contentType: string | undefined
  readonly body: any
}

export interface Receiver {
  readonly url: string
  readonly received: ReadonlyArray<Received>
  /** Every span received, with the service name of its resource. */
  readonly spans: () => ReadonlyArray<OtlpSpan & { readonly service: string | undefined }>
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

/** The value of an OTLP attribute (`stringValue`, `intValue`, ...). */
export const attr = (span: OtlpSpan, key: string): unknown => {
  const found = span.attributes.find((a) => a.key === key)?.value
  if (!found) return undefined
  const [kind, value] = Object.entries(found)[0] ?? []
  return kind === "intValue" ? Number(value) : value
}

export const start: Effect.Effect<Receiver, never, import("effect").Scope.Scope> = Effect.acquireRelease(
  Effect.callback<Receiver>((resume) => {
    const received: Array<Received> = []
    const server = createServer((req, res) => {
      readBody(req).then((text) => {
        received.push({ path: req.url ?? "", contentType: req.headers["content-type"], body: JSON.parse(text) })
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      }, () => res.writeHead(400).end())
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const receiver: Receiver & { server: typeof server } = {
        server,
        url: `http://127.0.0.1:${port}`,
        received,
        spans: () =>
          received.filter((r) => r.path === "/v1/traces").flatMap((r) =>
            (r.body.resourceSpans ?? []).flatMap((rs: any) => {
              const service = rs.resource?.attributes?.find((a: any) => a.key === "service.name")?.value?.stringValue
              return (rs.scopeSpans ?? []).flatMap((ss: any) => (ss.spans ?? []).map((s: OtlpSpan) => ({ ...s, service })))
            })
          )
      }
      resume(Effect.succeed(receiver))
    })
  }),
  (receiver) => Effect.callback<void>((resume) => void (receiver as any).server.close(() => resume(Effect.void)))
)
