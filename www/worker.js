// The page's Python, off the page's thread: Pyodide, our wheels and webdemo.page run in this dedicated
// worker (WebAssembly and WebGPU are available here), so a long run never blocks the page.
//
// To the page it posts: {step, text} while booting, {boot: "snapshot" | "normal", note} once Python runs,
// {failed} if booting fails, the JSON events of webdemo.page (strings), and {reply, value | error} for each
// request {id, action, args}. The actions "python" / "python-sync" run Python source in this Pyodide (the
// tests use them).
//
// Booting from the memory snapshot. When site.json names a snapshot (sitebuild.snapshot made it at build time
// in headless Chromium, with the wheels installed and the first result's modules imported), Pyodide is
// restored from it instead of starting CPython (seconds of work), then the files of site-packages (the wheels,
// as installed) are written back from the snapshot too: Pyodide's snapshot holds the wasm memory (sys.modules
// included) but not the files, which Pyodide keeps in JS. The
// snapshot is used only where this runtime makes the same choices the maker's did (SNAPSHOT_FEATURES: a
// snapshot keeps CPython's call trampoline and Pyodide's stack-switching flag, which differ between runtimes)
// and only when the key inside the file is site.json's (the wheels and Pyodide it was made with); otherwise,
// or when restoring fails, or writing the files back or importing the entry module after it does, Python starts
// normally and {boot: "normal", note} says why. The URL parameter
// ``snapshot=off`` on the page (passed on to this worker) starts normally too.
//
// With ``make-snapshot`` in its URL the worker makes that snapshot instead (sitebuild.snapshot drives it):
// it posts {snapshot: bytes, features} or {failed}.

let pyodide = null;
let page = null;
const options = new URL(self.location).searchParams;

//: "ATLASNAP", then the key's length (u32, little-endian), the key (UTF-8) and, from the next multiple of 16,
//: the payload (packPayload: the files of site-packages and Pyodide's snapshot)
const SNAPSHOT_MAGIC = "ATLASNAP";
//: the unit in which packPayload leaves out the zeros of Pyodide's memory (a wasm page)
const MEMORY_CHUNK = 65536;

function step(value, text) {
  self.postMessage({ step: value, text });
}

/** What went wrong, in words: an Error's message, or the errno of a file system error of Pyodide's (Emscripten's
 * FS.ErrnoError carries no message). */
function reason(error) {
  if (error && error.message) return error.message;
  if (error && error.errno !== undefined) return `file system error ${error.errno}`;
  return String(error);
}

/** What a memory snapshot keeps of the runtime it was made in: JS Promise Integration (Pyodide's run_sync)
 * and whether CPython's wasm call trampoline (typed function references / wasm GC) can be built. */
function snapshotFeatures() {
  const jspi = "Suspending" in WebAssembly ? "jspi" : "Suspender" in WebAssembly ? "jspi-old" : "no-jspi";
  // a module declaring one struct type: valid only where wasm GC is
  const gc = WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 3, 1, 0x5f, 0]));
  const ios = /iPad|iPhone|iPod/.test(self.navigator.userAgent) ||
    (self.navigator.platform === "MacIntel" && self.navigator.maxTouchPoints > 1);
  return `${jspi} ${gc ? "wasm-gc" : "no-wasm-gc"}${ios ? " ios" : ""}`;
}

/** {memory, files} of the snapshot at ``url``, checked against ``key``: Pyodide's snapshot and the files of
 * site-packages as they were ([path, bytes] pairs); rejects saying what is wrong. */
async function readSnapshot(url, key) {
  const response = await fetch(url, { cache: "no-cache" });
  if (!response.ok) throw new Error(`${url.pathname}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const magic = new TextDecoder().decode(bytes.subarray(0, 8));
  if (magic !== SNAPSHOT_MAGIC) throw new Error("the file is not an atlas-web snapshot");
  const length = new DataView(bytes.buffer).getUint32(8, true);
  const found = new TextDecoder().decode(bytes.subarray(12, 12 + length));
  if (found !== key) throw new Error(`it was made for other wheels or another Pyodide (key ${found.slice(0, 12)}…, ` +
                                     `site.json wants ${key.slice(0, 12)}…)`);
  const payload = bytes.subarray(Math.ceil((12 + length) / 16) * 16);
  const indexLength = new DataView(payload.buffer, payload.byteOffset).getUint32(0, true);
  const index = JSON.parse(new TextDecoder().decode(payload.subarray(4, 4 + indexLength)));
  const start = Math.ceil((4 + indexLength) / 16) * 16;  // where packPayload's offsets count from
  // a file cut short (or padded) would restore zeros in place of memory it lost: refuse it instead
  const kept = index.memory.chunks.reduce(
    (sum, chunk) => sum + Math.min(MEMORY_CHUNK, index.memory.length - chunk * MEMORY_CHUNK), 0);
  if (start + index.memory.offset + kept !== payload.length) {
    throw new Error(`the file is truncated: its payload has ${payload.length} bytes, its index says ` +
                    `${start + index.memory.offset + kept}`);
  }
  const memory = new Uint8Array(index.memory.length);  // zeros, but where a chunk was kept
  let from = start + index.memory.offset;
  for (const chunk of index.memory.chunks) {
    const to = Math.min((chunk + 1) * MEMORY_CHUNK, memory.length);
    memory.set(payload.subarray(from, from + to - chunk * MEMORY_CHUNK), chunk * MEMORY_CHUNK);
    from += to - chunk * MEMORY_CHUNK;
  }
  return {
    memory,
    files: index.files.map(([path, offset, size]) => [path, payload.subarray(start + offset, start + offset + size)]),
  };
}

/** The snapshot's payload (sitebuild.snapshot puts it after the key): a u32 length and a JSON index {files:
 * [[path, offset, size]...], memory: {offset, length, chunks}}, then, from the next multiple of 16 (offsets
 * count from there), the files' bytes and the MEMORY_CHUNK-sized chunks of Pyodide's ``memory`` that are not
 * all zeros (``chunks``: their numbers; a third of a fresh Python's memory is zeros). */
function packPayload(memory, files) {
  const align = (offset) => Math.ceil(offset / 16) * 16;
  let offset = 0;
  const placed = files.map(([path, data]) => [path, (offset += data.length) - data.length, data.length]);
  const words = new Uint32Array(memory.buffer, memory.byteOffset, memory.length / 4);
  const chunks = [];
  let kept = 0;
  for (let chunk = 0; chunk * MEMORY_CHUNK < memory.length; chunk++) {
    const end = Math.min((chunk + 1) * MEMORY_CHUNK, memory.length);
    if (words.subarray(chunk * MEMORY_CHUNK / 4, end / 4).some((word) => word !== 0)) {
      chunks.push(chunk);
      kept += end - chunk * MEMORY_CHUNK;
    }
  }
  const layout = { offset: align(offset), length: memory.length, chunks };
  const index = new TextEncoder().encode(JSON.stringify({ files: placed, memory: layout }));
  const start = align(4 + index.length);
  const payload = new Uint8Array(start + layout.offset + kept);
  new DataView(payload.buffer).setUint32(0, index.length, true);
  payload.set(index, 4);
  files.forEach(([, data], k) => payload.set(data, start + placed[k][1]));
  let to = start + layout.offset;
  for (const chunk of chunks) {
    const part = memory.subarray(chunk * MEMORY_CHUNK, Math.min((chunk + 1) * MEMORY_CHUNK, memory.length));
    payload.set(part, to);
    to += part.length;
  }
  return payload;
}

/** [path, bytes] of every file under ``directory`` of Pyodide's file system ``FS``. */
function filesUnder(FS, directory) {
  const found = [];
  for (const name of FS.readdir(directory)) {
    if (name === "." || name === "..") continue;
    const path = `${directory}/${name}`;
    if (FS.isDir(FS.stat(path).mode)) found.push(...filesUnder(FS, path));
    else found.push([path, FS.readFile(path)]);
  }
  return found;
}

/** Why the snapshot in ``manifest`` is not tried here, or "" when it is. */
function snapshotRefusal(manifest) {
  if (!manifest.snapshot_path) return "the site was built without a snapshot";
  if (options.get("snapshot") === "off") return "snapshot=off was asked for";
  const here = snapshotFeatures();
  if (here !== manifest.snapshot_features) {
    return `the snapshot was made where ${manifest.snapshot_features}, this browser has ${here}`;
  }
  return "";
}

/** {python: Pyodide, entry: the entry module}: restored from ``snapshot`` (readSnapshot's promise, or null where
 * ``refusal`` says why it is not tried), its site-packages written back and the entry module imported, where all
 * three can be done; else (a restored Python that cannot take its files back or import the entry module is
 * dropped) started normally, the wheels installed and the entry module imported. */
async function startPython(loadPyodide, manifest, base, snapshot, refusal) {
  const indexURL = new URL(manifest.pyodide_path, base).href;
  let note = refusal;
  if (snapshot) {
    let doing = "restoring the memory snapshot";
    try {
      const memory = snapshot.then((read) => read.memory);
      memory.catch(() => {});  // loadPyodide awaits it only once its own modules are in: no unhandled rejection
      const restored = await loadPyodide({ indexURL, _loadSnapshot: memory });
      // the snapshot holds the maker's state of Python's random module: reseed it from the browser's entropy,
      // or every page restored from this snapshot would draw the same numbers
      restored.runPython("import sys\nif 'random' in sys.modules: sys.modules['random'].seed()");
      self.postMessage({ mark: "pyodide" });
      step(3, `Installing ${manifest.project_name} ${manifest.project_version} from the snapshot…`);
      doing = "writing the snapshot's files back";
      restoreFiles(restored, (await snapshot).files);
      doing = `importing ${manifest.entry_module} after restoring the snapshot`;
      const entry = restored.pyimport(manifest.entry_module);
      self.postMessage({ mark: "wheels" });
      self.postMessage({ boot: "snapshot", note: "Python restored from the site's memory snapshot" });
      return { python: restored, entry };
    } catch (error) {
      note = `${doing} failed: ${reason(error)}`;
    }
    step(2, `Loading Python (Pyodide ${manifest.pyodide_version}) in a worker…`);
  }
  const started = await loadPyodide({ indexURL });
  self.postMessage({ boot: "normal", note: `Python started without the snapshot: ${note}` });
  self.postMessage({ mark: "pyodide" });
  step(3, `Installing ${manifest.project_name} ${manifest.project_version}…`);
  await installWheels(started, manifest, base);
  self.postMessage({ mark: "wheels" });
  return { python: started, entry: started.pyimport(manifest.entry_module) };
}

/** Install the site's wheels into ``python`` (Pyodide's loadPackage, by URL); raises on any problem. */
async function installWheels(python, manifest, base) {
  const problems = [];
  await python.loadPackage(manifest.wheels.map((wheel) => new URL(wheel, base).href), {
    messageCallback: () => {},
    errorCallback: (message) => problems.push(message),
  });
  if (problems.length) throw new Error(`installing the wheels failed: ${problems.join("; ")}`);
}

/** Write back the files a restored ``python`` had (its modules and the records of its install came with the
 * snapshot's memory, its files did not: Pyodide keeps them in JS) and let importlib see them. */
function restoreFiles(python, files) {
  const made = new Set();
  for (const [path, data] of files) {
    try {
      const directory = path.slice(0, path.lastIndexOf("/"));
      if (!made.has(directory)) python.FS.mkdirTree(directory);
      made.add(directory);
      python.FS.writeFile(path, data);
    } catch (error) {
      throw new Error(`${path}: ${reason(error)}`);
    }
  }
  python.runPython("import importlib; importlib.invalidate_caches()");
}

async function readManifest() {
  const response = await fetch(new URL("site.json", self.location), { cache: "no-cache" });
  if (!response.ok) throw new Error(`site.json: HTTP ${response.status}`);
  return await response.json();
}

async function boot() {
  step(1, "Reading the site manifest…");
  const manifest = await readManifest();
  const base = new URL(".", self.location);
  const refusal = snapshotRefusal(manifest);
  // the snapshot downloads and unpacks while Pyodide's modules load
  const snapshot = refusal ? null : readSnapshot(new URL(manifest.snapshot_path, base), manifest.snapshot_key);
  snapshot?.catch(() => {});  // a failure is reported where startPython awaits it
  step(2, snapshot ? `Restoring Python (Pyodide ${manifest.pyodide_version}) from the site's memory snapshot in a ` +
                     "worker…" : `Loading Python (Pyodide ${manifest.pyodide_version}) in a worker…`);
  const { loadPyodide } = await import(new URL("pyodide.mjs", new URL(manifest.pyodide_path, base)).href);

  const started = await startPython(loadPyodide, manifest, base, snapshot, refusal);
  pyodide = started.python;

  step(4, "Starting the page…");
  page = started.entry;
  await page.start();
  self.postMessage({ started: true, manifest });
}

/** The snapshot sitebuild.snapshot ships: Python with the wheels installed and the entry module's preload()
 * done (the modules of the first result imported), nothing started. */
async function makeSnapshot() {
  const manifest = await readManifest();
  const base = new URL(".", self.location);
  const { loadPyodide } = await import(new URL("pyodide.mjs", new URL(manifest.pyodide_path, base)).href);
  const python = await loadPyodide({ indexURL: new URL(manifest.pyodide_path, base).href, _makeSnapshot: true });
  await installWheels(python, manifest, base);
  python.runPython(`import importlib\nimportlib.import_module(${JSON.stringify(manifest.entry_module)}).preload()`);
  // Pyodide refuses a snapshot unless its loadedPackages record is empty (it checks that JS table slot
  // against {}); a restored worker writes the files of site-packages back from the snapshot (restoreFiles)
  for (const name of Object.keys(python.loadedPackages)) delete python.loadedPackages[name];
  const sitePackages = python.runPython("import site; site.getsitepackages()[0]");
  const snapshot = packPayload(python.makeMemorySnapshot(), filesUnder(python.FS, sitePackages));
  self.postMessage({ snapshot, features: snapshotFeatures() }, [snapshot.buffer]);
}

const ready = (options.has("make-snapshot") ? makeSnapshot() : boot()).catch((error) => {
  self.postMessage({ failed: reason(error) });
  throw error;
});

async function answer(action, args) {
  await ready;
  if (action === "python") return await pyodide.runPythonAsync(args.source);
  if (action === "python-sync") return pyodide.runPython(args.source);
  return await page.handle(action, JSON.stringify(args));
}

self.onmessage = async ({ data }) => {
  const { id, action, args } = data;
  try {
    let value = await answer(action, args);
    if (value && typeof value.toJs === "function") {
      const proxy = value;
      value = proxy.toString();
      proxy.destroy();
    }
    self.postMessage({ reply: id, value });
  } catch (error) {
    self.postMessage({ reply: id, error: reason(error) });
  }
};
