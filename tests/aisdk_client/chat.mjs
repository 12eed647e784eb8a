// useChat's chat logic without a framework: the ai package's AbstractChat over a plain state
// object (what React's useChat keeps in its store), shared by the scripts that drive it.
import { AbstractChat } from "ai";

export class State {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage(message) {
    this.messages = [...this.messages, message];
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

export class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new State(messages) });
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const copy = (value) => JSON.parse(JSON.stringify(value));
