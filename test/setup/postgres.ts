/**
 * A private PostgreSQL cluster for the tests and benchmarks of the PostgreSQL session store: a
 * real server on 127.0.0.1 (no mock), in a temp folder, on a free port, with a password (so the
 * URL carries a secret, as in production). `startPostgres` takes about a second (initdb), so only
 * the files that need it call it, in a `beforeAll`.
 *
 * PostgreSQL refuses to run as root: when the tests run as root, the cluster belongs to the
 * `postgres` OS user (created by Debian's package) and its commands run through `runuser`.
 */
import { execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface PostgresCluster {
  /** `postgres://baton:<password>@127.0.0.1:<port>/baton` */
  readonly url: string
  readonly password: string
  readonly port: number
  readonly stop: () => void
}

export const installHint = "install it with `npm run setup` (or `apt-get install -y postgresql`)"

/** The folder of `initdb` and `pg_ctl`: Debian keeps them off PATH, one folder per version. */
const findBinaries = (): string => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "pg_ctl"))).sort((a, b) => Number(b) - Number(a))
    : []
  if (versions[0] !== undefined) return join(root, versions[0], "bin")
  try {
    const initdb = execFileSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).trim()
    if (initdb) return initdb.slice(0, initdb.lastIndexOf("/"))
  } catch {
    // not on PATH either
  }
  throw new Error(`PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH): ${installHint}`)
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/**
 * Starts a cluster (`fsync` on unless `fast`, so a benchmark measures real commits) and creates
 * the `baton` database and role. Throws, with the install line, when PostgreSQL is missing.
 */
export const startPostgres = async (options: { readonly fast?: boolean } = {}): Promise<PostgresCluster> => {
  const bin = findBinaries()
  const asRoot = process.getuid?.() === 0
  const dir = mkdtempSync(join(tmpdir(), "baton-pg-"))
  const data = join(dir, "data")
  const password = `pw-${Math.random().toString(36).slice(2)}`
  const pwfile = join(dir, "pw")
  writeFileSync(pwfile, password)
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim())
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim())
    chownSync(dir, uid, gid)
    chownSync(pwfile, uid, gid)
  }
  const run = (tool: string, args: Array<string>) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, tool), ...args], { cwd: dir, stdio: "pipe" })
      : execFileSync(join(bin, tool), args, { cwd: dir, stdio: "pipe" })
  const port = await freePort()
  try {
    run("initdb", [
      "-D", data, "-U", "baton", `--pwfile=${pwfile}`, "--auth-local=trust", "--auth-host=scram-sha-256",
      "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"
    ])
    const settings = [
      "-c listen_addresses=127.0.0.1", `-p ${port}`, `-c unix_socket_directories=${dir}`,
      ...(options.fast ? ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"] : [])
    ]
    run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-w", "-t", "30", "-o", settings.join(" "), "start"])
    run("createdb", ["-h", dir, "-p", String(port), "-U", "baton", "baton"])
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? ""
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`could not start a PostgreSQL cluster (${bin}): ${stderr || String(error)}`)
  }
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    process.off("exit", stop)
    try {
      run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  // A run that ends without its teardown (a crash, an interrupted bench) leaves no server behind.
  process.once("exit", stop)
  return { url: `postgres://baton:${password}@127.0.0.1:${port}/baton`, password, port, stop }
}
