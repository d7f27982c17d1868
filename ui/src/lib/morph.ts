// Updating shown HTML in place. A streaming reply's last Markdown block (a whole list, say) is
// rendered again as it grows; putting the new HTML in whole would make the window lay out and
// paint the whole block each time, where only its end changed.

/** Makes `target`'s children match `html`: nodes equal to their new version are kept as they
 * are, text is changed in place, and an element whose name or attributes changed is replaced. */
export function morph(target: Element, html: string) {
  const template = document.createElement('template');
  template.innerHTML = html;
  morphChildren(target, template.content);
}

function morphChildren(into: Node, from: Node) {
  let old = into.firstChild;
  for (const node of Array.from(from.childNodes)) {
    if (old === null) {
      into.appendChild(node);
      continue;
    }
    const following = old.nextSibling;
    morphNode(old, node);
    old = following;
  }
  while (old !== null) {
    const following = old.nextSibling;
    into.removeChild(old);
    old = following;
  }
}

function morphNode(old: ChildNode, node: ChildNode) {
  if (old.isEqualNode(node)) return;
  if (old.nodeType !== node.nodeType || old.nodeName !== node.nodeName) return old.replaceWith(node);
  if (old instanceof CharacterData) {
    old.data = (node as CharacterData).data;
    return;
  }
  if (old instanceof Element && !sameAttributes(old, node as Element)) return old.replaceWith(node);
  morphChildren(old, node);
}

function sameAttributes(a: Element, b: Element): boolean {
  return a.attributes.length === b.attributes.length
    && Array.from(a.attributes).every((attr) => b.getAttribute(attr.name) === attr.value);
}
