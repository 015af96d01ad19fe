// A stand-in for the browsers' WebMCP before Chromium 155, whose executeTool took the
// input as JSON text: given an object, its argument conversion makes it the text
// "[object Object]", which does not parse, and the call is refused before any tool
// runs. The end-to-end test installs it ahead of every script of the page (as the
// browser's own getter on Document.prototype); the tools and their registration
// are the same as a native ModelContext's, and it counts the calls it receives.
(() => {
  const tools = new Map();
  const calls = [];
  class ModelContext extends EventTarget {
    async registerTool(tool) {
      if (tools.has(tool.name)) throw new DOMException('Duplicate tool name', 'InvalidStateError');
      tools.set(tool.name, tool);
      setTimeout(() => this.dispatchEvent(new Event('toolchange')));
    }
    async getTools() {
      return [...tools.values()].map((t) => ({
        name: t.name, title: t.title ?? '', description: t.description, window, origin: location.origin,
        inputSchema: t.inputSchema === undefined ? undefined : JSON.stringify(t.inputSchema),
      }));
    }
    async executeTool(tool, inputArguments) {
      const text = String(inputArguments);
      calls.push(typeof inputArguments);
      let input;
      try {
        input = JSON.parse(text);
      } catch {
        throw new DOMException('Failed to parse input arguments', 'UnknownError');
      }
      const t = tools.get(tool.name);
      if (!t) throw new DOMException('Tool not found', 'UnknownError');
      try {
        return JSON.stringify(await t.execute(input));
      } catch {
        throw new DOMException('Tool was executed but the invocation failed. For example, the script function threw an error', 'UnknownError');
      }
    }
  }
  const mc = new ModelContext();
  Object.defineProperty(Document.prototype, 'modelContext', { configurable: true, enumerable: true, get() { return mc; } });
  Object.defineProperty(window, '__olderCalls', { value: calls });
})();
