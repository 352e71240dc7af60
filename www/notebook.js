// A bare Pyodide for trying atlas-web by hand: nothing is installed until "Install atlas-web" is pressed
// (or pyodide.loadPackage is called on window.notebook.pyodide).

const $ = (id) => document.getElementById(id);
window.notebook = { ready: false };

function show(text) {
  $("cell-output").textContent = text;
}

/** What a cell that raised shows: Python's traceback from the cell's own frame on (Pyodide's frames that
 * ran the cell are dropped), or, for ``import atlas_web`` before the wheel is installed, what to press. */
function cellError(message, installed) {
  if (!installed && /No module named '(atlas_web|wasm_backend|webgpu_backend)'/.test(message)) {
    return "atlas-web is not installed in this Pyodide yet: press \"Install atlas-web\", then run the cell again.";
  }
  const lines = message.split("\n");
  const head = lines.indexOf("Traceback (most recent call last):");
  const cell = lines.findIndex((line) => line.startsWith('  File "<exec>"'));
  return head < 0 || cell < head ? message : [lines[head], ...lines.slice(cell)].join("\n");
}

async function boot() {
  const manifest = await (await fetch("site.json", { cache: "no-cache" })).json();
  const base = new URL(".", location.href);
  const pyodideURL = new URL(manifest.pyodide_path, base);
  const { loadPyodide } = await import(new URL("pyodide.mjs", pyodideURL).href);
  const output = [];
  const pyodide = await loadPyodide({
    indexURL: pyodideURL.href,
    stdout: (line) => output.push(line),
    stderr: (line) => output.push(line),
  });
  const wheelURLs = manifest.wheels.map((wheel) => new URL(wheel, base).href);
  // whether the wheel is in (pressing Install, or pyodide.loadPackage by hand); defines no name in the cells' globals
  const atlasWebInstalled = () =>
    pyodide.runPython("__import__('importlib.util').util.find_spec('atlas_web') is not None");

  $("install").addEventListener("click", async () => {
    $("install").disabled = true;
    $("notebook-status").textContent = "Installing…";
    const errors = [];
    try {
      await pyodide.loadPackage(wheelURLs, { messageCallback: () => {}, errorCallback: (text) => errors.push(text) });
    } catch (error) {
      errors.push(String(error.message || error));
    }
    const installed = atlasWebInstalled();
    $("notebook-status").textContent = installed ? "atlas-web installed."
      : `atlas-web could not be installed: ${errors.join(" ") || "unknown error"}`;
    $("install").disabled = installed;
  });
  $("cell").addEventListener("keydown", (event) => {   // Shift+Enter runs the cell, as in Jupyter
    if (event.key === "Enter" && event.shiftKey && !$("run-cell").disabled) {
      event.preventDefault();
      $("run-cell").click();
    }
  });
  $("run-cell").addEventListener("click", async () => {
    $("run-cell").disabled = true;   // one cell at a time: they share the output
    output.length = 0;
    try {
      const value = await pyodide.runPythonAsync($("cell").value);
      if (value !== undefined) output.push(String(value));
    } catch (error) {
      output.push(cellError(String(error.message || error), atlasWebInstalled()));
    } finally {
      $("run-cell").disabled = false;
    }
    show(output.join("\n"));
  });
  $("install").disabled = false;
  $("run-cell").disabled = false;
  $("notebook-status").textContent = `Pyodide ${manifest.pyodide_version} ready.`;
  Object.assign(window.notebook, { ready: true, pyodide, manifest, wheelURLs });
  document.body.dataset.state = "ready";
}

boot().catch((error) => {
  $("notebook-status").textContent = `Python could not start: ${error.message || error}`;
  document.body.dataset.state = "failed";
});
