// The page's Python, off the page's thread: Pyodide, our wheels and webdemo.page run in this dedicated
// worker (WebGPU and WebAssembly are available here), so a long run never blocks the page.
//
// To the page it posts: {step, text} while booting, {failed} if booting fails, the JSON events of
// webdemo.page (strings), and {reply, value | error} for each request {id, action, args}. The actions
// "python" / "python-sync" run Python source in this Pyodide (the tests use them).

let pyodide = null;
let page = null;

function step(value, text) {
  self.postMessage({ step: value, text });
}

async function boot() {
  step(1, "Reading the site manifest…");
  const response = await fetch(new URL("site.json", self.location), { cache: "no-cache" });
  if (!response.ok) throw new Error(`site.json: HTTP ${response.status}`);
  const manifest = await response.json();
  const base = new URL(".", self.location);
  const pyodideURL = new URL(manifest.pyodide_path, base);

  step(2, `Loading Python (Pyodide ${manifest.pyodide_version}) in a worker…`);
  const { loadPyodide } = await import(new URL("pyodide.mjs", pyodideURL).href);
  pyodide = await loadPyodide({ indexURL: pyodideURL.href });
  self.postMessage({ mark: "pyodide" });

  step(3, `Installing ${manifest.project_name} ${manifest.project_version}…`);
  const problems = [];
  await pyodide.loadPackage(manifest.wheels.map((wheel) => new URL(wheel, base).href), {
    messageCallback: () => {},
    errorCallback: (message) => problems.push(message),
  });
  if (problems.length) throw new Error(`installing the wheels failed: ${problems.join("; ")}`);
  self.postMessage({ mark: "wheels" });

  step(4, "Starting the page…");
  page = pyodide.pyimport(manifest.entry_module);
  await page.start();
  self.postMessage({ started: true, manifest });
}

const ready = boot().catch((error) => {
  self.postMessage({ failed: String(error && error.message ? error.message : error) });
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
    self.postMessage({ reply: id, error: String(error && error.message ? error.message : error) });
  }
};
