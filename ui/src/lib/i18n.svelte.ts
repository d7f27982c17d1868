// All UI text, in English and Simplified Chinese. `zh` is typed against `en`, so a key missing in
// either language does not compile; i18n.test.ts checks placeholders and that every key used in
// a component exists.
import type { Language } from './api';

const en = {
  'app.loading': 'Loading…',
  'nav.chat': 'Chat',
  'nav.settings': 'Settings',

  'firstRun.title': 'Welcome to Ponder',
  'firstRun.lead': 'An offline workbench for logic and maths. Ponder runs a small reasoning model on this computer: nothing you ask leaves it.',
  'firstRun.needModel': 'To start, Ponder needs a model.',
  'firstRun.download': 'Download the default model',
  'firstRun.openLocal': 'Open a local GGUF file or model folder',
  'firstRun.openFolder': 'or a model folder (safetensors)',
  'firstRun.downloading': 'Downloading {model}',
  'firstRun.progress': '{done} of {total} · {speed}/s · {eta} left',
  'firstRun.downloadFailed': 'The download stopped: {error}. Try again to resume it.',

  'model.name': 'Model',
  'model.architecture': 'Architecture',
  'model.reasoning': 'reasoning',
  'model.weights': 'Weights',
  'model.parameters': '{count} parameters',
  'model.size': 'Size',
  'model.context': 'Context',
  'model.file': 'File',

  'chat.new': 'New chat',
  'chat.search': 'Search conversations',
  'chat.untitled': 'New conversation',
  'chat.noConversations': 'No conversations yet.',
  'chat.noMatches': 'Nothing matches “{query}”.',
  'chat.rename': 'Rename',
  'chat.delete': 'Delete',
  'chat.confirmDelete': 'Delete “{title}” and all its messages?',
  'chat.emptyThread': 'Ask a question about logic or maths. The model thinks first, then answers.',
  'chat.placeholder': 'Ask anything… (Enter sends, Shift+Enter for a new line)',
  'chat.send': 'Send',
  'chat.stop': 'Stop',
  'chat.thinking': 'Thinking…',
  'chat.thought': 'Thought for {seconds} s',
  'chat.tokens': '{count} tokens',
  'chat.waiting': 'Waiting for the model…',
  'chat.copy': 'Copy',
  'chat.copied': 'Copied',
  'chat.regenerate': 'Regenerate',
  'chat.edit': 'Edit',
  'chat.resend': 'Send again',
  'chat.cancel': 'Cancel',
  'chat.stats': 'First token {ttft} s · {tps} tok/s · {thinking} thinking + {answer} answer tokens',
  'chat.finish.cancelled': 'Stopped.',
  'chat.finish.length': 'Cut off at the length limit.',
  'chat.finish.repetition': 'Stopped: the model was repeating itself.',
  'chat.finish.interrupted': 'Interrupted when Ponder closed.',
  'chat.finish.error': 'Failed: {error}',

  'status.noModel': 'No model',
  'status.loading': 'Loading the model…',
  'status.failed': 'The model failed to load: {error}',
  'status.sequences': '{running} running · {waiting} waiting',
  'status.speed': '{tps} tok/s',

  'settings.title': 'Settings',
  'settings.model': 'Model',
  'settings.changeModel': 'Open another model…',
  'settings.engine': 'Engine',
  'settings.threads': 'CPU threads',
  'settings.maxSequences': 'Sequences at once',
  'settings.contextSize': 'Context size (tokens)',
  'settings.restartHint': 'Engine settings apply the next time Ponder starts.',
  'settings.sampling': 'Answers',
  'settings.temperature': 'Temperature',
  'settings.topP': 'Top-p',
  'settings.maxTokens': 'Max tokens per reply',
  'settings.thinkingBudget': 'Thinking budget (tokens, empty for none)',
  'settings.server': 'Local API server',
  'settings.serverEnabled': 'Serve an OpenAI-compatible API on this computer',
  'settings.serverPort': 'Port',
  'settings.serverOn': 'Serving at {url}',
  'settings.serverStarting': 'Starting…',
  'settings.serverFailed': 'Not running: {error}',
  'settings.serverOff': 'Off',
  'settings.appearance': 'Appearance',
  'settings.language': 'Language',
  'settings.theme': 'Theme',
  'settings.theme.light': 'Light',
  'settings.theme.dark': 'Dark',
  'settings.theme.system': 'Same as the system',
  'settings.save': 'Save',
  'settings.saved': 'Saved.',
};

export type MessageKey = keyof typeof en;

const zh: Record<MessageKey, string> = {
  'app.loading': '加载中…',
  'nav.chat': '对话',
  'nav.settings': '设置',

  'firstRun.title': '欢迎使用 Ponder',
  'firstRun.lead': '离线的逻辑与数学工作台。Ponder 在这台电脑上运行一个小型推理模型：你的提问不会离开这台电脑。',
  'firstRun.needModel': '开始之前，Ponder 需要一个模型。',
  'firstRun.download': '下载默认模型',
  'firstRun.openLocal': '打开本地 GGUF 文件或模型文件夹',
  'firstRun.openFolder': '或模型文件夹（safetensors）',
  'firstRun.downloading': '正在下载 {model}',
  'firstRun.progress': '{done} / {total} · {speed}/秒 · 剩余 {eta}',
  'firstRun.downloadFailed': '下载中断：{error}。再试一次即可继续下载。',

  'model.name': '模型',
  'model.architecture': '架构',
  'model.reasoning': '推理模型',
  'model.weights': '权重',
  'model.parameters': '{count} 参数',
  'model.size': '大小',
  'model.context': '上下文',
  'model.file': '文件',

  'chat.new': '新对话',
  'chat.search': '搜索对话',
  'chat.untitled': '新对话',
  'chat.noConversations': '还没有对话。',
  'chat.noMatches': '没有与“{query}”匹配的对话。',
  'chat.rename': '重命名',
  'chat.delete': '删除',
  'chat.confirmDelete': '删除“{title}”及其全部消息？',
  'chat.emptyThread': '提一个逻辑或数学问题。模型会先思考，再回答。',
  'chat.placeholder': '输入问题…（Enter 发送，Shift+Enter 换行）',
  'chat.send': '发送',
  'chat.stop': '停止',
  'chat.thinking': '思考中…',
  'chat.thought': '已思考 {seconds} 秒',
  'chat.tokens': '{count} 个词元',
  'chat.waiting': '等待模型…',
  'chat.copy': '复制',
  'chat.copied': '已复制',
  'chat.regenerate': '重新生成',
  'chat.edit': '编辑',
  'chat.resend': '重新发送',
  'chat.cancel': '取消',
  'chat.stats': '首词元 {ttft} 秒 · {tps} 词元/秒 · 思考 {thinking} + 回答 {answer} 个词元',
  'chat.finish.cancelled': '已停止。',
  'chat.finish.length': '已达长度上限，回答被截断。',
  'chat.finish.repetition': '已停止：模型在重复自己。',
  'chat.finish.interrupted': 'Ponder 关闭时被中断。',
  'chat.finish.error': '失败：{error}',

  'status.noModel': '没有模型',
  'status.loading': '正在加载模型…',
  'status.failed': '模型加载失败：{error}',
  'status.sequences': '运行 {running} · 等待 {waiting}',
  'status.speed': '{tps} 词元/秒',

  'settings.title': '设置',
  'settings.model': '模型',
  'settings.changeModel': '打开其他模型…',
  'settings.engine': '引擎',
  'settings.threads': 'CPU 线程数',
  'settings.maxSequences': '同时运行的序列数',
  'settings.contextSize': '上下文长度（词元）',
  'settings.restartHint': '引擎设置在下次启动 Ponder 时生效。',
  'settings.sampling': '回答',
  'settings.temperature': '温度',
  'settings.topP': 'Top-p',
  'settings.maxTokens': '每条回答的最大词元数',
  'settings.thinkingBudget': '思考预算（词元，留空表示不限）',
  'settings.server': '本地 API 服务',
  'settings.serverEnabled': '在本机提供兼容 OpenAI 的 API',
  'settings.serverPort': '端口',
  'settings.serverOn': '正在 {url} 提供服务',
  'settings.serverStarting': '正在启动…',
  'settings.serverFailed': '未运行：{error}',
  'settings.serverOff': '已关闭',
  'settings.appearance': '外观',
  'settings.language': '语言',
  'settings.theme': '主题',
  'settings.theme.light': '浅色',
  'settings.theme.dark': '深色',
  'settings.theme.system': '跟随系统',
  'settings.save': '保存',
  'settings.saved': '已保存。',
};

export const dictionaries: Record<Language, Record<MessageKey, string>> = { en, 'zh-CN': zh };

const current = $state<{ language: Language }>({ language: 'en' });

export function setLanguage(language: Language) {
  current.language = language;
  document.documentElement.lang = language;
}

export function language(): Language {
  return current.language;
}

/** The text for `key` in the current language, with `{name}` placeholders filled in. */
export function t(key: MessageKey, vars: Record<string, string | number> = {}): string {
  const text = dictionaries[current.language][key] ?? en[key];
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}
