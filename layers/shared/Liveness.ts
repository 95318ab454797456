/**
 * Liveness for the WebSockets under the providers (realtime models, streaming STT and TTS). A
 * connection that dies without a close (a NAT that forgot it, a phone that changed networks)
 * sends nothing and fails no write, so nothing would ever notice: the socket pings the server
 * every `interval` and is terminated (a close with code 1006, as a lost TCP connection gives)
 * when neither a pong nor any frame came within `timeout` of a ping.
 */
import { Duration } from "effect"
import { WebSocket } from "ws"

/**
 * How a provider socket is checked: a ping every `interval`, the socket counted lost when no
 * answer comes within `timeout`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Liveness {
  readonly interval: Duration.Input
  readonly timeout: Duration.Input
}

export const defaultLiveness: Liveness = { interval: "10 seconds", timeout: "10 seconds" }

/** Pings open socket `ws` and terminates it when the server stops answering. */
export const watch = (ws: WebSocket, liveness: Liveness): void => {
  const interval = Duration.toMillis(Duration.fromInputUnsafe(liveness.interval))
  const timeout = Duration.toMillis(Duration.fromInputUnsafe(liveness.timeout))
  /** Set while a ping waits for an answer: anything the server sends clears it. */
  let deadline: ReturnType<typeof setTimeout> | undefined
  const alive = () => {
    if (deadline !== undefined) clearTimeout(deadline)
    deadline = undefined
  }
  ws.on("pong", alive)
  ws.on("message", alive)
  const pinger = setInterval(() => {
    if (ws.readyState !== WebSocket.OPEN || deadline !== undefined) return
    ws.ping()
    deadline = setTimeout(() => ws.terminate(), timeout)
    deadline.unref()
  }, interval)
  // The timers never keep the process alive on their own.
  pinger.unref()
  ws.once("close", () => {
    clearInterval(pinger)
    alive()
  })
}
