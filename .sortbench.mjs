import Database from 'better-sqlite3';
const db = new Database(process.argv[2], { readonly: true });
db.pragma('cache_size = -65536'); db.pragma('temp.cache_size = -65536'); db.pragma('temp_store = FILE');
const COLS = 'pid, scheme, value, name, country, registered, smp, ap_seat_id, provenance, first_seen_at';
const run = (label, sql) => { const t = performance.now(); let n = 0, b = 0; for (const r of db.prepare(sql).iterate()) { n++; b += r.pid.length; } console.log(label, n, ((performance.now() - t) / 1000).toFixed(2), 's'); };
run('sort name', `SELECT ${COLS} FROM participant_list ORDER BY name IS NULL, name ASC, pid ASC`);
run('index name + nulls', `SELECT * FROM (SELECT ${COLS} FROM participant_list WHERE name IS NOT NULL ORDER BY name, pid) UNION ALL SELECT * FROM (SELECT ${COLS} FROM participant_list WHERE name IS NULL ORDER BY pid)`);
run('default (first_seen desc)', `SELECT ${COLS} FROM participant_list ORDER BY first_seen_at DESC, pid DESC`);
run('rowid scan', `SELECT ${COLS} FROM participant_list`);
