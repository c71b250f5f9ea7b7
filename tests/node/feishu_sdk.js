// The Feishu scenario with the official Node SDK, in its usual form: the client is given an
// app id and the (placeholder) app secret and fetches its own tenant token; paddock's gateway
// answers that call and puts the real token on the requests. Prints one line a step.
const lark = require('@larksuiteoapi/node-sdk');
const client = new lark.Client({
    appId: 'cli_paddocktest',
    appSecret: process.env.LARKSUITE_CLI_APP_SECRET,
    domain: lark.Domain.Feishu,
    // its own logging (to stdout) kept out of the lines the test reads
    logger: {error() {}, warn() {}, info() {}, debug() {}, trace() {}},
});
const table = {app_token: 'bascExample', table_id: 'tblExample'};
const status = (e) => (e.response ? e.response.status : e.message);
(async () => {
    const r = await client.bitable.appTableRecord.list({path: table, params: {page_size: 2}});
    console.log('read', r.code, r.data.items.length);
    const c = await client.bitable.appTableRecord.create({path: table,
        data: {fields: {Name: 'from the node client', Status: 'Todo'}}});
    console.log('create', c.code, c.data.record.record_id.startsWith('rec'));
    try {
        await client.bitable.appTableRecord.delete({path: {...table, record_id: 'recSeed0002'}});
        console.log('delete went through');
    } catch (e) {
        console.log('delete refused', status(e));
    }
})().catch((e) => { console.log('error', status(e)); process.exit(1); });
