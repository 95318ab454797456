/**
 * The browser script both pages (the caller's, Page.ts; the operator's, OperatorPage.ts) use to
 * open the microphone as PCM16: an AudioWorklet that turns each render quantum into Int16 samples
 * and posts them. Interpolated into each page's inline script, which sends the frames its own way.
 */
export const microphoneScript = `// The microphone as PCM16 frames (an AudioWorklet node), at the audio context's rate.
const pcm16Worklet = "registerProcessor('pcm16', class extends AudioWorkletProcessor { process(inputs) { const c = inputs[0][0]; if (c) { const p = new Int16Array(c.length); for (let i = 0; i < c.length; i++) p[i] = Math.max(-32768, Math.min(32767, c[i] * 32768)); this.port.postMessage(p.buffer, [p.buffer]) } return true } })"
const openMicrophone = async (ctx) => {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } })
  await ctx.audioWorklet.addModule(URL.createObjectURL(new Blob([pcm16Worklet], { type: "text/javascript" })))
  const node = new AudioWorkletNode(ctx, "pcm16"); ctx.createMediaStreamSource(stream).connect(node)
  return { stream, node }
}`
