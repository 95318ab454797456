/**
 * What the chat layer will wait for and read: a response must start within `responseTimeout`
 * (retried like a transport failure), a stream may be silent for at most `idleTimeout` (not
 * retried: part of the answer may have been spoken), an error body is read up to
 * `maxErrorBodyBytes` (the rest is not downloaded), an answer up to `maxResponseChars`. A server
 * that stalls or floods cannot hold a turn or the process's memory.
 */
import { Duration, Effect, Stream } from "effect"
import { AiError } from "effect/ai"
import type { HttpClientResponse } from "effect/http"
import { aiError } from "./ChatErrors.ts"

/** The limits a user can set on the chat layer. */
export interface Tuning {
  /**
   * Longest wait for the response to start (its headers), per attempt; a timeout is retried like
   * a transport failure. Default 30 s.
   */
  readonly responseTimeout?: Duration.Input | undefined
  /**
   * Longest silence in the response stream (also before its first chunk): a server that sends
   * headers and then nothing ends the reply with a Timeout instead of holding the turn. Not
   * retried (part of the answer may have been spoken). Default 30 s.
   */
  readonly idleTimeout?: Duration.Input | undefined
  /**
   * The most of an error body (or a JSON answer where a stream was asked for) that is read; the
   * rest is not downloaded. Default 64 KiB.
   */
  readonly maxErrorBodyBytes?: number | undefined
  /** The longest answer accepted, in characters of the response stream. Default 4 MiB. */
  readonly maxResponseChars?: number | undefined
}

export interface LimitOptions extends Tuning {
  readonly url: string
}

export const make = (options: LimitOptions) => {
  const responseTimeout = Duration.fromInputUnsafe(options.responseTimeout ?? "30 seconds")
  const idleTimeout = Duration.fromInputUnsafe(options.idleTimeout ?? "30 seconds")
  const maxErrorBodyBytes = options.maxErrorBodyBytes ?? 64 * 1024
  const maxResponseChars = options.maxResponseChars ?? 4 * 1024 * 1024
  /** A timeout is a transport failure whose description says so (src/ErrorInfo reads it). */
  const timedOut = (method: string, what: string) =>
    aiError(method, new AiError.NetworkError({ reason: "TransportError", method: "POST", url: options.url, description: `timeout: ${what}` }))

  return {
    /** Fails the attempt when its response has not started in time. */
    responseTimeout: (method: string) =>
    <A, R>(attempt: Effect.Effect<A, AiError.AiError, R>): Effect.Effect<A, AiError.AiError, R> =>
      Effect.timeoutOrElse(attempt, {
        duration: responseTimeout,
        orElse: () => Effect.fail(timedOut(method, `no response within ${Duration.format(responseTimeout)}`))
      }),

    /** Fails the stream after a silence of `idleTimeout` (also before its first chunk). */
    idleTimeout: (method: string) =>
    <A, E, R>(stream: Stream.Stream<A, E, R>): Stream.Stream<A, E | AiError.AiError, R> =>
      Stream.timeoutOrElse(stream, {
        duration: idleTimeout,
        orElse: () => Stream.fail(timedOut(method, `the response stream was silent for ${Duration.format(idleTimeout)}`))
      }),

    /** Fails the stream once its text passes `maxResponseChars`. */
    maxAnswer: (method: string) =>
    <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<string, E | AiError.AiError, R> =>
      Stream.suspend(() => {
        let received = 0
        return Stream.mapEffect(text, (chunk) => {
          received += chunk.length
          return received > maxResponseChars
            ? Effect.fail(aiError(method, new AiError.InvalidResponseError({ description: `the answer exceeded ${maxResponseChars} characters` })))
            : Effect.succeed(chunk)
        })
      }),

    /** At most `maxErrorBodyBytes` of a body, as text; never fails. */
    boundedText: (response: HttpClientResponse.HttpClientResponse): Effect.Effect<string> =>
      Effect.suspend(() => {
        let seen = 0
        return response.stream.pipe(
          Stream.takeWhile((chunk) => {
            const keep = seen < maxErrorBodyBytes
            seen += chunk.byteLength
            return keep
          }),
          Stream.runCollect,
          Effect.map((chunks) => {
            const text = new TextDecoder().decode(Buffer.concat(chunks).subarray(0, maxErrorBodyBytes))
            return seen > maxErrorBodyBytes ? `${text}... (body cut at ${maxErrorBodyBytes} bytes)` : text
          }),
          Effect.orElseSucceed(() => "")
        )
      })
  }
}
