import fs from 'node:fs';
const f = fs.readdirSync('.').filter(x=>x.endsWith('.cpuprofile'))[0];
const p = JSON.parse(fs.readFileSync(f));
const self = new Map(), byId = new Map(p.nodes.map(n=>[n.id,n]));
const dt = new Map(); for (let i=0;i<p.samples.length;i++) dt.set(p.samples[i], (dt.get(p.samples[i])??0)+(p.timeDeltas[i]??0));
let total=0; for (const n of p.nodes){const t=dt.get(n.id)??0; total+=t; const k=`${n.callFrame.functionName||'(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`; self.set(k,(self.get(k)??0)+t);}
// inclusive
const parent = new Map(); for (const n of p.nodes) for (const c of n.children??[]) parent.set(c,n.id);
const incl = new Map();
for (const n of p.nodes){const t=dt.get(n.id)??0; if(!t) continue; const seen=new Set(); let id=n.id; while(id!==undefined){const m=byId.get(id); const k=`${m.callFrame.functionName||'(anon)'} ${m.callFrame.url.split('/').slice(-2).join('/')}:${m.callFrame.lineNumber}`; if(!seen.has(k)){seen.add(k); incl.set(k,(incl.get(k)??0)+t);} id=parent.get(id);} }
console.log('total ms', (total/1000).toFixed(0));
console.log('--- self'); for (const [k,v] of [...self].sort((a,b)=>b[1]-a[1]).slice(0,25)) console.log((v/total*100).toFixed(1)+'%', k);
console.log('--- inclusive'); for (const [k,v] of [...incl].sort((a,b)=>b[1]-a[1]).slice(0,45)) console.log((v/total*100).toFixed(1)+'%', k);
