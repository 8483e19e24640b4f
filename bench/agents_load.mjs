// Simulates N agents: each registers a node, then long-polls :sync with
// waitSeconds=W for D seconds, as a real agent does when nothing changes.
// Prints the syncs completed and any errors. Usage:
//   node bench/agents_load.mjs BASE_URL N WAIT_SECONDS DURATION_SECONDS
import http from 'node:http';

const [base, n = '1000', wait = '10', duration = '30'] = process.argv.slice(2);
const N = Number(n), W = Number(wait), D = Number(duration) * 1000;
const agent = new http.Agent({ keepAlive: true, maxSockets: N + 16 });
const token = process.env.TRAINPLANE_AGENT_TOKEN || 'trainplane-dev-token';

function post(path, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(new URL(path, base), {
      method: 'POST', agent,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`,
                 'content-length': Buffer.byteLength(data) },
    }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

let syncs = 0, errors = 0;
const name = (i) => `sim-${String(i).padStart(4, '0')}`;
for (let i = 0; i < N; i += 50) {
  await Promise.all(Array.from({ length: Math.min(50, N - i) }, (_, k) => post(
    `/agent/v1/nodes/${name(i + k)}:register`,
    { incarnation: 'bench', region: 'us-west1', zone: 'us-west1-a', vcpus: 8, memoryMb: 30720,
      address: '127.0.0.1', portRange: [30000, 30100], runtime: 'simulate' })));
}
console.log(`registered ${N} nodes`);
const end = Date.now() + D;
await Promise.all(Array.from({ length: N }, async (_, i) => {
  let version = '';
  while (Date.now() < end) {
    try {
      const r = await post(`/agent/v1/nodes/${name(i)}:sync`,
                           { incarnation: 'bench', waitSeconds: W, desiredVersion: version, replicas: [] });
      if (r.status !== 200) { errors++; continue; }
      version = JSON.parse(r.text).desiredVersion;
      syncs++;
    } catch { errors++; await new Promise((r) => setTimeout(r, 100)); }
  }
}));
console.log(`syncs=${syncs} errors=${errors}`);
agent.destroy();
