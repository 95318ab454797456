/**
 * The CLI's logs: Effect's loggers, on stderr (stdout is the conversation), at the level from
 * `--log-level` (a global flag of Effect's CLI) or `BATON_LOG_LEVEL` (default `info`), pretty in a terminal and JSON lines
 * otherwise (`BATON_LOG_FORMAT=pretty|json` to choose).
 */
import { Config, Data, Effect, Layer, Logger, type LogLevel, Option, References } from "effect"

export const levels = ["trace", "debug", "info", "warn", "error", "none"] as const
export type Level = (typeof levels)[number]

const toLogLevel: Record<Level, LogLevel.LogLevel> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  none: "None"
}

export type Format = "pretty" | "json"

export class LogSettingError extends Data.TaggedError("LogSettingError")<{ readonly message: string }> {}

const fromText = (name: string, value: string): Effect.Effect<Level, LogSettingError> => {
  const level = value.trim().toLowerCase()
  return (levels as ReadonlyArray<string>).includes(level)
    ? Effect.succeed(level as Level)
    : Effect.fail(new LogSettingError({ message: `${name}=${value}: use one of ${levels.join(", ")}` }))
}

/** The level and format this run logs at; the flag (`--log-level`, Effect's CLI) wins over the environment. */
export const settings = (flag: Option.Option<LogLevel.LogLevel>) =>
  Effect.gen(function*() {
    const fromEnv = yield* Config.option(Config.String("BATON_LOG_LEVEL")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const level: LogLevel.LogLevel = Option.isSome(flag)
      ? flag.value
      : Option.isSome(fromEnv) && fromEnv.value.trim() !== ""
      ? toLogLevel[yield* fromText("BATON_LOG_LEVEL", fromEnv.value)]
      : "Info"
    const formatEnv = yield* Config.option(Config.Literals(["pretty", "json"], "BATON_LOG_FORMAT")).pipe(
      Effect.orElseSucceed(() => Option.none<Format>())
    )
    const format: Format = Option.getOrElse(formatEnv, () => (process.stderr.isTTY ? "pretty" : "json"))
    return { level, format }
  })

export const layer = (options: { readonly level: LogLevel.LogLevel; readonly format: Format }): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([options.format === "json" ? Logger.withConsoleError(Logger.formatJson) : Logger.consolePretty()]),
    Layer.succeed(References.MinimumLogLevel, options.level),
    Layer.succeed(Logger.LogToStderr, true)
  )

/** Provides the logging this run asked for to `effect`. */
export const provide = (flag: Option.Option<LogLevel.LogLevel>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(settings(flag), (s) => effect.pipe(Effect.provide(layer(s))))
