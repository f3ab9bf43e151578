// Sends one /v1/messages request through airouter with the official
// Anthropic TypeScript SDK and prints what the SDK parsed, as one JSON
// line: {"text", "usage", "stop_reason", "events"}.
//
// Usage: node messages.mjs plain|stream
// Environment: AIROUTER_BASE_URL (the router, no /v1), AIROUTER_KEY (a key
// the router accepts), AIROUTER_MODEL.
import Anthropic from '@anthropic-ai/sdk';

const mode = process.argv[2];
const client = new Anthropic({
  apiKey: process.env.AIROUTER_KEY,
  baseURL: process.env.AIROUTER_BASE_URL,
  maxRetries: 0, // any failover seen is the router's
  timeout: 30_000,
});
const params = {
  model: process.env.AIROUTER_MODEL,
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Say hello.' }],
};

function text(message) {
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

let out;
if (mode === 'plain') {
  const message = await client.messages.create(params);
  out = { text: text(message), usage: message.usage, stop_reason: message.stop_reason, events: 0 };
} else if (mode === 'stream') {
  const stream = client.messages.stream(params);
  let events = 0;
  stream.on('streamEvent', () => { events++; });
  const message = await stream.finalMessage();
  out = { text: text(message), usage: message.usage, stop_reason: message.stop_reason, events };
} else {
  console.error(`unknown mode ${JSON.stringify(mode)}: want plain or stream`);
  process.exit(2);
}
console.log(JSON.stringify(out));
