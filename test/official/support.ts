/**
 * What the "official client" tests share: a local TLS front (a self-signed certificate for
 * 127.0.0.1, made by `openssl` for the test) for clients that insist on `wss://`, and an inbox
 * that keeps what a client's callbacks receive and waits for a message in it.
 */
import { Effect, type Scope } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as tls from "node:tls"

export interface TlsFront {
  /** `127.0.0.1:port` of the TLS side. */
  readonly host: string
  /** The certificate (PEM), to give the client as its `ca`. */
  readonly cert: string
}

/** A self-signed certificate for IP 127.0.0.1 (valid one day). */
const selfSigned = (): { readonly key: string; readonly cert: string } => {
  const dir = mkdtempSync(join(tmpdir(), "baton-tls-"))
  try {
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")
    ], { stdio: "pipe" })
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") }
  } catch (e) {
    throw new Error(`the TLS front needs openssl to make its certificate (apt-get install openssl): ${String(e)}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** TLS on 127.0.0.1 in front of the plain server at `target` (`http://127.0.0.1:port/...` or `ws://...`). */
export const tlsFront = (target: string): Effect.Effect<TlsFront, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const { key, cert } = selfSigned()
      const port = Number(new URL(target).port)
      const sockets = new Set<net.Socket>()
      const server = tls.createServer({ key, cert }, (client) => {
        const upstream = net.connect(port, "127.0.0.1")
        for (const s of [client, upstream]) {
          sockets.add(s)
          s.on("error", () => {
            client.destroy()
            upstream.destroy()
          })
          s.on("close", () => sockets.delete(s))
        }
        client.pipe(upstream).pipe(client)
      })
      return new Promise<{ server: tls.Server; sockets: Set<net.Socket>; front: TlsFront }>((resolve) =>
        server.listen(0, "127.0.0.1", () => {
          const { port: tlsPort } = server.address() as net.AddressInfo
          resolve({ server, sockets, front: { host: `127.0.0.1:${tlsPort}`, cert } })
        })
      )
    }),
    ({ server, sockets }) =>
      Effect.promise(() => {
        for (const s of sockets) s.destroy()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      })
  ).pipe(Effect.map(({ front }) => front))

/** What a client's callbacks received, in order; `next` waits for the first unread match. */
export interface Inbox<A> {
  readonly all: Array<A>
  readonly push: (a: A) => void
  /** The first unread message that matches (earlier unread ones are passed over), within `ms`. */
  readonly next: <B extends A = A>(match: (a: A) => boolean, what: string, ms?: number) => Promise<B>
}

export const inbox = <A>(): Inbox<A> => {
  const all: Array<A> = []
  let read = 0
  let wake: (() => void) | undefined
  const next = <B extends A>(match: (a: A) => boolean, what: string, ms = 10_000) =>
    new Promise<B>((resolve, reject) => {
      const timer = setTimeout(() => {
        wake = undefined
        reject(new Error(`no ${what} within ${ms} ms`))
      }, ms)
      const check = () => {
        for (; read < all.length; read++) {
          if (match(all[read]!)) {
            clearTimeout(timer)
            wake = undefined
            resolve(all[read++] as B)
            return
          }
        }
        wake = check
      }
      check()
    })
  return {
    all,
    push: (a) => {
      all.push(a)
      wake?.()
    },
    next
  }
}

/**
 * Type-checks recorded server frames against an SDK's wire type: writes them as a typed array
 * literal (`const frames: ReadonlyArray<Type> = [...]`, so excess and mistyped fields are errors)
 * into a file next to this one, compiles it with the project's TypeScript, and returns the
 * diagnostics (empty: every frame is a `Type`).
 */
/** An SDK type as JSON carries it: a string enum is its values (`${E}`), everything else as is. */
const WIRE = `type Wire<T> = T extends string ? \`\${T}\` : T extends ReadonlyArray<infer U> ? ReadonlyArray<Wire<U>> : T extends object ? { [K in keyof T]: Wire<T[K]> } : T`

export const typeCheckFrames = async (
  frames: ReadonlyArray<unknown>,
  wire: {
    readonly module: string
    readonly type: string
    /** The type the frames must have, when not `type` itself (e.g. `Omit<type, "getter">`). */
    readonly as?: string
    /** Fields that are `null` are left out (an SDK whose types model nullable fields as optional). */
    readonly nullAsAbsent?: boolean
  }
): Promise<Array<string>> => {
  const ts = (await import("typescript")).default
  const dir = mkdtempSync(join(import.meta.dirname, ".frames-"))
  const file = join(dir, "frames.ts")
  try {
    const replacer = wire.nullAsAbsent ? (_key: string, value: unknown) => (value === null ? undefined : value) : undefined
    const body = frames.map((f, i) => `  /* ${i} */ ${JSON.stringify(f, replacer)}`).join(",\n")
    writeFileSync(file, `import type { ${wire.type} } from "${wire.module}"\n${WIRE}\nexport const frames: ReadonlyArray<Wire<${wire.as ?? wire.type}>> = [\n${body}\n]\n`)
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      types: []
    })
    const source = program.getSourceFile(file)
    return ts.getPreEmitDiagnostics(program, source).map((d) => {
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1
      const line = where >= 0 ? d.file!.text.split("\n")[where]!.slice(0, 160) : ""
      return `${ts.flattenDiagnosticMessageText(d.messageText, "\n").slice(0, 600)}\n    at ${line}`
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
