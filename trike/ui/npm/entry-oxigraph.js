// Entry point bundled by build_assets.py into assets/oxigraph.js (IIFE, global `oxigraph`).
// The page instantiates the WebAssembly module from inlined bytes: `await oxigraph.init({module_or_path: bytes})`.
export * from "oxigraph/web.js";
export { default as init } from "oxigraph/web.js";
