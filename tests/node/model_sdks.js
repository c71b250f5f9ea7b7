// The fake model API (tests/fixtures/fake_model_api.py) against the official SDKs: OpenAI's
// (the Responses API over SSE, as JSON and over WebSocket) and Anthropic's (the Messages API
// over SSE and as JSON). The SDKs' own stream helpers rebuild the whole response from the
// events and throw on one that does not fit, so that a check passing here means a client
// reads the fake as it reads the real API. Prints one line a check ("NAME ok" or "NAME
// FAILED: why"); exits 1 when one failed.
//
//   BASE=http://127.0.0.1:PORT OPENAI_KEY=... ANTHROPIC_KEY=... node model_sdks.js
const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');
const {ResponsesWS} = require('openai/resources/beta/responses/ws');

const base = process.env.BASE;
const openai = new OpenAI({apiKey: process.env.OPENAI_KEY, baseURL: base + '/v1', maxRetries: 0});
const anthropic = new Anthropic({apiKey: process.env.ANTHROPIC_KEY, baseURL: base, maxRetries: 0});
const shellTool = {
    type: 'function', name: 'shell', description: 'Runs a command.', strict: false,
    parameters: {type: 'object', properties: {command: {type: 'array', items: {type: 'string'}}}},
};
const writeTool = {
    name: 'Write', description: 'Writes a file.',
    input_schema: {type: 'object', properties: {file_path: {type: 'string'}, content: {type: 'string'}}},
};
const prompt = 'Write the file notes.txt containing exactly: from the sdk';
let failed = 0;

async function check(name, fn) {
    try {
        const why = await fn();
        if (why) {
            failed++;
            console.log(`${name} FAILED: ${why}`);
        } else {
            console.log(`${name} ok`);
        }
    } catch (e) {
        failed++;
        console.log(`${name} FAILED: ${(e && e.stack || String(e)).split('\n').slice(0, 3).join(' | ')}`);
    }
}

const expect = (what, got, want) =>
    JSON.stringify(got) === JSON.stringify(want) ? null : `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;

(async () => {
    let call;
    await check('openai-stream-tool-call', async () => {
        const stream = openai.responses.stream({model: 'gpt-5', input: prompt, tools: [shellTool]});
        const kinds = [];
        let args = '';
        stream.on('response.function_call_arguments.delta', (e) => { args += e.delta; });
        for await (const event of stream) kinds.push(event.type);
        const r = await stream.finalResponse();
        call = r.output[0];
        const command = JSON.parse(call.arguments).command;
        return expect('events', [...new Set(kinds)], ['response.created', 'response.in_progress',
            'response.output_item.added', 'response.function_call_arguments.delta',
            'response.function_call_arguments.done', 'response.output_item.done', 'response.completed']) ||
            expect('status', r.status, 'completed') ||
            expect('item', [call.type, call.name, call.status], ['function_call', 'shell', 'completed']) ||
            expect('deltas', args, call.arguments) ||
            expect('command', command, ['bash', '-lc', "printf '%s\\n' 'from the sdk' > notes.txt"]) ||
            expect('usage', r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    });
    let first;
    await check('openai-stream-after-tool', async () => {
        const stream = openai.responses.stream({model: 'gpt-5', tools: [shellTool], input: [
            {role: 'user', content: prompt},
            {type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments},
            {type: 'function_call_output', call_id: call.call_id, output: 'exit 0'},
        ]});
        let text = '';
        stream.on('response.output_text.delta', (e) => { text += e.delta; });
        first = await stream.finalResponse();
        return expect('output_text', first.output_text, 'Done: wrote notes.txt.') ||
            expect('deltas', text, first.output_text) ||
            expect('message', [first.output[0].type, first.output[0].role], ['message', 'assistant']);
    });
    await check('openai-json', async () => {
        const r = await openai.responses.create({model: 'gpt-5', input: 'Hello'});
        return expect('output_text', r.output_text, 'Hello from the fake model API.') ||
            expect('object', [r.object, r.model, r.status], ['response', 'gpt-5', 'completed']);
    });
    await check('openai-previous-response', async () => {
        const r = await openai.responses.create({model: 'gpt-5', previous_response_id: first.id,
            input: 'What did I ask for?'});
        return expect('output_text', r.output_text, 'Earlier you asked for notes.txt.');
    });
    await check('openai-unknown-previous-response', async () => {
        try {
            await openai.responses.create({model: 'gpt-5', previous_response_id: 'resp_nosuch', input: 'x'});
        } catch (e) {
            return expect('error', [e.constructor.name, e.status, e.code, e.param],
                ['BadRequestError', 400, 'previous_response_not_found', 'previous_response_id']);
        }
        return 'no error';
    });
    await check('openai-wrong-key', async () => {
        const other = new OpenAI({apiKey: 'sk-wrong', baseURL: base + '/v1', maxRetries: 0});
        try {
            await other.responses.create({model: 'gpt-5', input: 'x'});
        } catch (e) {
            return expect('error', [e.constructor.name, e.status, e.code, e.type],
                ['AuthenticationError', 401, 'invalid_api_key', 'invalid_request_error']);
        }
        return 'no error';
    });
    await check('openai-models', async () => {
        const ids = [];
        for await (const m of openai.models.list()) ids.push(m.id);
        return ids.includes('gpt-5') ? null : `models: ${ids}`;
    });
    await check('openai-websocket', async () => {
        const ws = new ResponsesWS(openai);
        const seen = [];
        let done = 0, lastId, output;
        ws.send({type: 'response.create', model: 'gpt-5', input: prompt, tools: [shellTool], store: false});
        for await (const m of ws.stream()) {
            if (m.type === 'error') throw m.error;
            if (m.type !== 'message') continue;
            seen.push(m.message.type);
            if (m.message.type !== 'response.completed') continue;
            done++;
            lastId = m.message.response.id;
            output = m.message.response.output;
            if (done === 1) {
                // the next turn continues the first on the same connection (store: false)
                const c = output[0];
                ws.send({type: 'response.create', model: 'gpt-5', previous_response_id: lastId, store: false,
                    input: [{type: 'function_call_output', call_id: c.call_id, output: 'exit 0'}]});
            } else {
                ws.close({code: 1000, reason: 'done'});
                break;
            }
        }
        return expect('turns', done, 2) ||
            expect('first', seen.slice(0, 3), ['response.created', 'response.in_progress', 'response.output_item.added']) ||
            expect('text', output[0].content[0].text, 'Done: wrote notes.txt.');
    });
    await check('openai-websocket-other-connection', async () => {
        // a store: false response is only on the connection that made it
        const ws = new ResponsesWS(openai);
        ws.send({type: 'response.create', model: 'gpt-5', input: 'Hello', store: false});
        let id;
        for await (const m of ws.stream()) {
            if (m.type === 'message' && m.message.type === 'response.completed') { id = m.message.response.id; break; }
        }
        ws.close({code: 1000, reason: 'done'});
        const ws2 = new ResponsesWS(openai);
        ws2.send({type: 'response.create', model: 'gpt-5', input: 'x', previous_response_id: id});
        let error;
        for await (const m of ws2.stream()) {
            if (m.type === 'error') { error = m.error.error || m.error; break; }
            if (m.type === 'message' && m.message.type === 'error') { error = m.message; break; }
            if (m.type === 'message' && m.message.type === 'response.completed') return 'answered';
        }
        ws2.close({code: 1000, reason: 'done'});
        return error ? expect('error', [error.status, error.error && error.error.code],
            [400, 'previous_response_not_found']) : 'no error event';
    });

    let use;
    await check('anthropic-stream-tool-use', async () => {
        const stream = anthropic.messages.stream({model: 'claude-sonnet-4-5', max_tokens: 1024, tools: [writeTool],
            system: 'Working directory: /work/space', messages: [{role: 'user', content: prompt}]});
        const kinds = [];
        stream.on('streamEvent', (e) => kinds.push(e.type));
        let json = '';
        stream.on('inputJson', (delta) => { json += delta; });
        const m = await stream.finalMessage();
        use = m.content[0];
        return expect('events', [...new Set(kinds)], ['message_start', 'content_block_start',
            'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']) ||
            expect('stop_reason', m.stop_reason, 'tool_use') ||
            expect('tool_use', [use.type, use.name, use.input], ['tool_use', 'Write',
                {file_path: '/work/space/notes.txt', content: 'from the sdk\n'}]) ||
            expect('deltas', JSON.parse(json), use.input);
    });
    await check('anthropic-stream-after-tool', async () => {
        const stream = anthropic.messages.stream({model: 'claude-sonnet-4-5', max_tokens: 1024, tools: [writeTool],
            messages: [{role: 'user', content: prompt}, {role: 'assistant', content: [use]},
                {role: 'user', content: [{type: 'tool_result', tool_use_id: use.id, content: 'written'}]}]});
        let text = '';
        stream.on('text', (t) => { text += t; });
        const m = await stream.finalMessage();
        return expect('stop_reason', m.stop_reason, 'end_turn') ||
            expect('text', [m.content[0].text, text], ['Done: wrote notes.txt.', 'Done: wrote notes.txt.']) ||
            expect('usage', m.usage.output_tokens > 0, true);
    });
    await check('anthropic-json', async () => {
        const m = await anthropic.messages.create({model: 'claude-sonnet-4-5', max_tokens: 64,
            messages: [{role: 'user', content: 'Hello'}]});
        return expect('message', [m.type, m.role, m.content[0].text, m.stop_reason],
            ['message', 'assistant', 'Hello from the fake model API.', 'end_turn']);
    });
    await check('anthropic-count-tokens', async () => {
        const c = await anthropic.messages.countTokens({model: 'claude-sonnet-4-5',
            messages: [{role: 'user', content: 'Hello'}]});
        return c.input_tokens > 0 ? null : `input_tokens ${c.input_tokens}`;
    });
    await check('anthropic-wrong-key', async () => {
        const other = new Anthropic({apiKey: 'sk-ant-wrong', baseURL: base, maxRetries: 0});
        try {
            await other.messages.create({model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{role: 'user', content: 'x'}]});
        } catch (e) {
            return expect('error', [e.constructor.name, e.status, e.error && e.error.error && e.error.error.type],
                ['AuthenticationError', 401, 'authentication_error']);
        }
        return 'no error';
    });
    await check('anthropic-bad-request', async () => {
        try {
            await anthropic.messages.create({model: 'claude-sonnet-4-5', messages: [{role: 'user', content: 'x'}]});
        } catch (e) {
            return expect('error', [e.constructor.name, e.status], ['BadRequestError', 400]);
        }
        return 'no error';
    });
    await check('anthropic-models', async () => {
        const ids = [];
        for await (const m of anthropic.models.list()) ids.push(m.id);
        return ids.length > 0 ? null : 'no models';
    });
    process.exit(failed ? 1 : 0);
})();
