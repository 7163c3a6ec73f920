import { catalogLimits } from '@pcp/contracts';
import type { ErrorSink } from './error-sink.js';
import type { ReferenceIndex } from './reference-checks.js';

/** How many nodes of a cycle its error message spells out. */
const CYCLE_NODES_SHOWN = 8;

/** Section nesting must be acyclic: one error per back edge of a depth-first walk. */
export function checkSectionCycles(refs: ReferenceIndex, sink: ErrorSink): void {
  const start = refs.sections.start;
  walkDepthFirst(refs.sectionKeys.length, refs.sectionKeys.length, start, refs.sections.edges, {
    onBackEdge: (node, edge, target, stack, from, top) => {
      const cycle = describeCycle(stack, from, top, target, (n) => refs.sectionKeys[n]!);
      sink.add(
        ['sections', refs.sectionKeys[node]!, 'sectionIds', edge - start[node]!],
        `Section ${refs.sectionKeys[node]!} lists section ${refs.sectionKeys[target]!}, which contains it: sections must not nest in a cycle (${cycle}).`,
      );
    },
  });
}

/**
 * Modifier nesting (item → its groups → their option items → …) must be acyclic and at
 * most `maxModifierDepth` group levels deep. One walk does both: the height of an item is
 * the number of group levels below it (memoized), and each back edge is one cycle.
 */
export function checkModifierNesting(refs: ReferenceIndex, sink: ErrorSink): void {
  const items = refs.itemKeys.length;
  const count = items + refs.groupKeys.length;
  /** The node reaches a cycle: its height is meaningless and not reported. */
  const tainted = new Uint8Array(count);
  const height = new Int32Array(count);
  const start = refs.modifiers.start;
  const tooDeep = catalogLimits.maxModifierDepth + 1;
  const name = (n: number): string =>
    n < items ? `item ${refs.itemKeys[n]!}` : `group ${refs.groupKeys[n - items]!}`;

  // Every modifier cycle passes through an item, so walking from the items finds them all.
  walkDepthFirst(count, items, start, refs.modifiers.edges, {
    onEnter: (node) => {
      height[node] = node < items ? 0 : 1;
    },
    onBackEdge: (node, edge, target, stack, from, top) => {
      tainted[node] = 1;
      reportModifierCycle(refs, sink, node, edge - start[node]!, target, stack, from, top, name);
    },
    onCrossEdge: (node, target) => fold(node, target),
    onFinish: (node, parent) => {
      if (node < items && height[node] === tooDeep && tainted[node] === 0) {
        reportTooDeep(refs, sink, node, tooDeep, height);
      }
      if (parent >= 0) fold(parent, node);
    },
  });

  function fold(parent: number, child: number): void {
    if (tainted[child] === 1) tainted[parent] = 1;
    const through = parent < items ? height[child]! : height[child]! + 1;
    if (through > height[parent]!) height[parent] = through;
  }
}

function reportModifierCycle(
  refs: ReferenceIndex,
  sink: ErrorSink,
  node: number,
  edgeIndex: number,
  target: number,
  stack: Int32Array,
  from: number,
  top: number,
  name: (n: number) => string,
): void {
  const items = refs.itemKeys.length;
  const cycle = describeCycle(stack, from, top, target, name);
  if (node < items) {
    const key = refs.itemKeys[node]!;
    sink.add(
      ['items', key, 'modifierGroupIds', edgeIndex],
      `Item ${key} uses modifier group ${refs.groupKeys[target - items]!}, which leads back to it: modifiers must not nest in a cycle (${cycle}).`,
    );
  } else {
    const key = refs.groupKeys[node - items]!;
    sink.add(
      ['modifierGroups', key, 'itemIds', edgeIndex],
      `Modifier group ${key} offers item ${refs.itemKeys[target]!}, which leads back to it: modifiers must not nest in a cycle (${cycle}).`,
    );
  }
}

/** An item whose modifier groups nest exactly one level too deep (its ancestors are not repeated). */
function reportTooDeep(
  refs: ReferenceIndex,
  sink: ErrorSink,
  node: number,
  levels: number,
  height: Int32Array,
): void {
  const items = refs.itemKeys.length;
  const start = refs.modifiers.start[node]!;
  const end = refs.modifiers.start[node + 1]!;
  for (let e = start; e < end; e++) {
    const group = refs.modifiers.edges[e]!;
    if (group >= 0 && height[group] === levels) {
      const key = refs.itemKeys[node]!;
      sink.add(
        ['items', key, 'modifierGroupIds', e - start],
        `Item ${key} nests modifier groups ${levels} levels deep through modifier group ${refs.groupKeys[group - items]!}; at most ${catalogLimits.maxModifierDepth} levels are allowed.`,
      );
      return;
    }
  }
}

function describeCycle(
  stack: Int32Array,
  from: number,
  top: number,
  target: number,
  name: (n: number) => string,
): string {
  const parts: string[] = [];
  for (let p = from; p <= top && parts.length < CYCLE_NODES_SHOWN; p++) {
    parts.push(name(stack[p]!));
  }
  if (top - from + 1 > CYCLE_NODES_SHOWN) parts.push('…');
  parts.push(name(target));
  return parts.join(' → ');
}

interface DepthFirstVisitor {
  /** A node is first reached (roots included). */
  onEnter?(node: number): void;
  /**
   * The edge at index `edge` from `node` reaches `target`, which is on the current path: a
   * cycle, the path's nodes being `stack[from..top]`.
   */
  onBackEdge(
    node: number,
    edge: number,
    target: number,
    stack: Int32Array,
    from: number,
    top: number,
  ): void;
  /** An edge reaches a node already finished. */
  onCrossEdge?(node: number, target: number): void;
  /** Every edge of `node` is walked; `parent` reached it (-1 for a root). */
  onFinish?(node: number, parent: number): void;
}

/**
 * Iterative depth-first walk over a graph in compressed form (the edges of node n are
 * `edges[start[n]..start[n + 1]]`, a negative target being a missing reference), from
 * each of the first `roots` nodes not yet seen. No recursion, so 100k-node catalogs
 * cannot exhaust the stack.
 */
function walkDepthFirst(
  count: number,
  roots: number,
  start: ArrayLike<number>,
  edges: ArrayLike<number>,
  visitor: DepthFirstVisitor,
): void {
  const state = new Uint8Array(count); // 0 unvisited, 1 on the walk's path, 2 done
  const stack = new Int32Array(count);
  const cursor = new Int32Array(count);
  const position = new Int32Array(count);
  for (let root = 0; root < roots; root++) {
    if (state[root] !== 0) continue;
    let top = 0;
    stack[0] = root;
    cursor[0] = start[root]!;
    position[root] = 0;
    state[root] = 1;
    visitor.onEnter?.(root);
    while (top >= 0) {
      const node = stack[top]!;
      const edge = cursor[top]!;
      if (edge < start[node + 1]!) {
        cursor[top] = edge + 1;
        const target = edges[edge]!;
        if (target < 0) continue;
        if (state[target] === 0) {
          top += 1;
          stack[top] = target;
          cursor[top] = start[target]!;
          position[target] = top;
          state[target] = 1;
          visitor.onEnter?.(target);
        } else if (state[target] === 1) {
          visitor.onBackEdge(node, edge, target, stack, position[target]!, top);
        } else {
          visitor.onCrossEdge?.(node, target);
        }
      } else {
        state[node] = 2;
        top -= 1;
        visitor.onFinish?.(node, top >= 0 ? stack[top]! : -1);
      }
    }
  }
}
