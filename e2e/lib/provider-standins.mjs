// Local stand-ins for the turn-end judge's providers (issue 11, SPEC J2–J7), for the
// end-to-end specs: an OpenAI-compatible chat endpoint (`POST <base>/chat/completions`,
// base `http://127.0.0.1:<port>/v1`), a TypeSafe System One–style decision endpoint
// (`POST <base>/systemone`) and an authenticated global route pool (`GET <origin>/v1/routes`),
// each on its own ephemeral loopback port. They speak the wire
// shapes the companion's `providers::chat` and `providers::decision` send and read (the
// same as the Rust stand-in in companion/tests/it/provider_standin.rs), and a helper
// writes the companion's `config.json` with routes pointing at them.
//
// A spec switches a stand-in at run time: `answer(…)`, `slow(ms)`, `fail(status)`,
// `garbage()`, `hang()`. Every request is recorded (method, path, headers, the bearer
// token, the parsed body) so a spec can assert how often a provider was asked, what it
// was sent, and that a key reached only its own provider, as `Authorization: Bearer`.
//
// Invariants: nothing listens beyond 127.0.0.1; a request to any other path is answered
// 404 and still recorded (so a wrong URL shows up in `requests`, never as a verdict);
// `close()` ends every open connection, including the ones a `hang()` holds.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

/** The question every decision call asks (providers::decision::QUESTION). */
export const DECISION_QUESTION = 'has_unfinished_work';
/** The five goal-mode priors of SPEC J7, in the order the companion asks them. */
export const GOAL_PRIORS = ['can_continue', 'needs_human', 'waiting_external', 'task_completed', 'needs_handoff'];
/** The largest request body a stand-in reads (the companion sends a few tens of KB at most). */
const MAX_BODY_BYTES = 1024 * 1024;

/** A provider stand-in; build it with `startChatStandin` or `startDecisionStandin`. */
class ProviderStandin {
  constructor({ kind, protocol, path: servedPath, answerBody, method = 'POST', token = null }) {
    /** `chat` or `decision`. */
    this.kind = kind;
    /** The route protocol a config names it with (`openai-chat`, `decision`). */
    this.protocol = protocol;
    /** The request path it serves (`/v1/chat/completions`, `/v1/systemone`). */
    this.path = servedPath;
    /** Every request so far, oldest first. */
    this.requests = [];
    /** The request method it serves (`POST`; the route pool `GET`). */
    this.method = method;
    /** The bearer token it requires (answering 401 to any other), or null for none. */
    this.token = token;
    /** Builds the 200 body of an answer from `answer(...)`'s argument. */
    this.answerBody = answerBody;
    this.behaviour = { kind: 'answer', body: null, delayMs: 0 };
    this.sockets = new Set();
    this.server = http.createServer((request, response) => this.#serve(request, response));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  async listen() {
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', resolve);
    });
    /** `http://127.0.0.1:<port>`. */
    this.origin = `http://127.0.0.1:${this.server.address().port}`;
    /** The route `url` to configure for `openai-chat` and `decision`: the API base, `<origin>/v1`. */
    this.base = `${this.origin}/v1`;
    return this;
  }

  /** How many requests reached the stand-in (any path). */
  get count() {
    return this.requests.length;
  }

  /** Answer 200 in the documented shape; see the start functions for what `what` is. */
  answer(what) {
    this.behaviour = { kind: 'answer', body: this.answerBody(what), delayMs: 0 };
    return this;
  }

  /** Keep the current answer (or `what`, when given) but send it only after `ms`. */
  slow(ms, what) {
    const body = what === undefined ? this.behaviour.body : this.answerBody(what);
    this.behaviour = { kind: 'answer', body, delayMs: ms };
    return this;
  }

  /** Answer `status` (default 503) with a small JSON error body, as an overloaded API does. */
  fail(status = 503) {
    this.behaviour = { kind: 'status', status };
    return this;
  }

  /** Answer 200 with a body that is not JSON (a proxy's HTML error page). */
  garbage() {
    this.behaviour = { kind: 'garbage' };
    return this;
  }

  /** Read the request and never answer; the connection stays open until the client gives up. */
  hang() {
    this.behaviour = { kind: 'hang' };
    return this;
  }

  /**
   * A route object for config.json pointing here: `{name, protocol, url, model, api_key}`.
   * A `decision-vercel` route's url is the endpoint itself (`<origin><path>`), the others'
   * the API base.
   */
  route(name, { apiKey = `key-${name}`, model = `${name}-model`, protocol = this.protocol } = {}) {
    const url = protocol === 'decision-vercel' ? `${this.origin}${this.path}` : this.base;
    return { name, protocol, url, model, api_key: apiKey };
  }

  /** Forgets the recorded requests. */
  reset() {
    this.requests = [];
  }

  async close() {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(() => resolve()));
  }

  #serve(request, response) {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body = null;
      try {
        body = JSON.parse(raw);
      } catch {
        // Recorded as null: a spec asserting on the body then fails with what was sent.
      }
      const authorization = request.headers.authorization ?? null;
      const bearer = authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : null;
      this.requests.push({ method: request.method, path: request.url, headers: { ...request.headers }, authorization, bearer, raw, body });
      if (request.method !== this.method || request.url !== this.path) {
        sendJson(response, 404, { error: { message: `the stand-in serves ${this.method} ${this.path}, not ${request.method} ${request.url}` } });
        return;
      }
      if (this.token !== null && bearer !== this.token) {
        sendJson(response, 401, { error: { message: 'unknown token' } });
        return;
      }
      this.#reply(response);
    });
  }

  #reply(response) {
    const behaviour = this.behaviour;
    switch (behaviour.kind) {
      case 'answer': {
        const send = () => sendJson(response, 200, behaviour.body ?? this.answerBody(undefined));
        if (behaviour.delayMs > 0) setTimeout(send, behaviour.delayMs);
        else send();
        return;
      }
      case 'status':
        sendJson(response, behaviour.status, { error: { message: 'stand-in failure', type: 'server_error' } });
        return;
      case 'garbage':
        response.writeHead(200, { 'Content-Type': 'text/html' });
        response.end('<html><body>502 Bad Gateway</body></html>');
        return;
      case 'hang':
        // Never answer; `close()` destroys the socket.
        return;
      default:
        throw new Error(`unknown stand-in behaviour ${behaviour.kind}`);
    }
  }
}

function sendJson(response, status, value) {
  const text = JSON.stringify(value);
  response.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}

/** A chat completion in OpenAI's wire shape whose message content is `content`. */
export function chatCompletion(content, model = 'stand-in') {
  return {
    id: 'chatcmpl-standin',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

/**
 * Starts an OpenAI-compatible stand-in. `answer(what)`: `what` is a verdict object
 * `{verdict: 'continue'|'done'|'unsure', reason}` (sent as the JSON the companion asks the
 * model for) or a string used as the message content as it is (to try prose, fences or
 * nonsense). Starts answering `{verdict: 'done', reason: 'stand-in: finished'}`.
 */
export async function startChatStandin(initial = { verdict: 'done', reason: 'stand-in: finished' }) {
  const answerBody = (what = initial) => chatCompletion(typeof what === 'string' ? what : JSON.stringify(what));
  const standin = new ProviderStandin({ kind: 'chat', protocol: 'openai-chat', path: '/v1/chat/completions', answerBody });
  await standin.listen();
  return standin.answer(initial);
}

/** A System One answer: `p` for the question, and each given prior (`{can_continue: 0.9, …}`). */
export function decisionAnswer(p, priors = {}) {
  const answers = { [DECISION_QUESTION]: { noul: p } };
  for (const [name, value] of Object.entries(priors)) {
    if (!GOAL_PRIORS.includes(name)) throw new Error(`${name} is not one of the goal priors ${GOAL_PRIORS.join(', ')}`);
    answers[name] = { noul: value };
  }
  return { answers };
}

/**
 * Starts a System One–style decision stand-in. `answer(what)`: a probability that work is
 * left (`0.92`), or `{p, priors}` with any of the five goal priors. Starts answering 0.5
 * (unsure at the default threshold). `path` is where it serves: `/v1/systemone` for a
 * `decision` route; a `decision-vercel` stand-in serves at a deployed function's path
 * (`{ path: '/api/jev' }`), which its `route(name, {protocol: 'decision-vercel'})` names.
 */
export async function startDecisionStandin(initial = 0.5, { path: servedPath = '/v1/systemone' } = {}) {
  const answerBody = (what = initial) => (typeof what === 'number' ? decisionAnswer(what) : decisionAnswer(what.p, what.priors));
  const standin = new ProviderStandin({ kind: 'decision', protocol: 'decision', path: servedPath, answerBody });
  await standin.listen();
  return standin.answer(initial);
}

/**
 * Starts a global route pool stand-in (SPEC J5; README "Turn-end judge"): `GET
 * <origin>/v1/routes` with `Authorization: Bearer <token>` answers `{routes}`; any other
 * token gets 401. `answer(routes)` changes the list; `fail`, `garbage`, `hang` as for the
 * providers. `config()` is the `judge.global_pool` section pointing here (with another
 * token, to see it refused).
 */
export async function startRoutePoolStandin({ token, routes = [] }) {
  const answerBody = (what = routes) => ({ routes: what });
  const standin = new ProviderStandin({ kind: 'route-pool', protocol: null, path: '/v1/routes', answerBody, method: 'GET', token });
  await standin.listen();
  standin.config = ({ token: sent = token, cacheTtlMs } = {}) => ({
    url: `${standin.origin}/v1/routes`,
    token: sent,
    ...(cacheTtlMs === undefined ? {} : { cache_ttl_ms: cacheTtlMs }),
  });
  return standin.answer(routes);
}

/**
 * Writes `<home>/config.json` with `judge` as its judge section (`{routes, threshold,
 * call_timeout_ms, …}`, README "Turn-end judge") and sets its mode (0600 by default; give
 * 0o644 to see it refused). Other top-level sections already in the file (the MCP token)
 * are kept. `home` is the companion home: `sandbox.home`, which the runtime, the native
 * host and the CLI read through `HERDR_CONTINUITY_HOME`. Returns the file's path.
 */
export function writeJudgeConfig(home, judge, { mode = 0o600 } = {}) {
  const file = path.join(home, 'config.json');
  let config = {};
  if (existsSync(file)) {
    config = JSON.parse(readFileSync(file, 'utf8'));
    chmodSync(file, 0o600);
  }
  config.judge = judge;
  // Private while the keys are written, then set to `mode`.
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, mode);
  return file;
}

/**
 * Runs `use({decision, chat})` with a decision stand-in answering `decision` and a chat
 * stand-in answering `chat` (the start functions' defaults when omitted); both are closed
 * afterwards, also when `use` fails.
 */
export async function withProviderStandins(use, { decision: decisionAnswerAt, chat: chatAnswerWith } = {}) {
  const decision = await startDecisionStandin(decisionAnswerAt);
  const chat = await startChatStandin(chatAnswerWith);
  try {
    return await use({ decision, chat });
  } finally {
    await decision.close();
    await chat.close();
  }
}
